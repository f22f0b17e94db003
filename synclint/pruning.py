"""Leave out of the libcst parse the top-level statements no rule can report on.

libcst's parser is most of a cold run, and a model file is mostly code no rule
can fire on: configuration tables, ``@register_model`` factories, argument
parsing. The file-level prefilter (:mod:`synclint.prefilter`) cannot skip such
files, since they mention ``torch`` somewhere; this module works one top-level
statement at a time, on the stdlib tree the guard already built.

A top-level statement is **kept** when

* its code (identifiers, attribute names, keywords, annotation strings; not
  other strings or comments) holds a token of an enabled rule (the rules'
  ``TOKENS``), a method of the sync-op catalogue (matched on receivers of
  unknown kind in torch code), a comparison method (read as evidence) or a
  name bound by a torch import, or it imports or declares ``global`` anything
  (imports are resolved module-wide); or
* it binds a module-level name that a kept statement mentions (so the kept
  code is analysed with the same module-level kinds, closed transitively).

Every other statement is replaced by empty lines, so line numbers, columns and
the kept code are unchanged. Why that is exact: everything the analysis
learns about a value comes from tokens, torch names or module-level names; a
dropped statement holds none of the first two, so it can only see tensors
through module-level names of kept statements. After the analysis,
:meth:`Pruned.is_exact` checks that every such name a dropped statement
mentions is inert (never bound to, returning or evidenced as anything but an
unknown or plain Python value); if one is not, the engine analyses the whole
file instead. It does the same when a finding outside any function carries a
fix, since fixes at module level look for free names across the module.
``tests/test_pruning.py`` checks both directions and that findings on the
examples and on every rule example are unchanged.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from synclint.analysis.imports import ImportMap, imports_from_tree
from synclint.analysis.kinds import ARRAY_METHODS, COMPARISON_METHODS, Kind
from synclint.catalogue import CATALOGUE
from synclint.prefilter import rule_tokens
from synclint.project.scopes import COMPREHENSIONS, child_nodes, names_bound_by, walk_nodes
from synclint.sources import source_lines

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The name after a dot, across spaces, line continuations and comments (``x . float()``).
_ATTRIBUTE_NAME = re.compile(r"\.(?:[ \t\f\r\n\\]|#[^\n]*)*([A-Za-z_][A-Za-z0-9_]*)")
# A string the analysis may read as a type (``x: "torch.Tensor"``).
_ANNOTATION_LIKE = re.compile(r"[\w.\[\], |]{1,200}")
_INERT = frozenset({Kind.UNKNOWN, Kind.PYTHON})
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SCOPE_NODES = (*_DEFINITIONS, ast.Lambda)
# Worth the bookkeeping only when this much of the file can go.
_MIN_DROPPED_FRACTION = 0.05


@dataclass(frozen=True)
class Pruned:
    """The source with dropped statements blanked, and what it takes to trust it."""

    source: str
    tree: ast.Module  # the kept statements of the stdlib tree (same line numbers)
    #: module-level names bound by kept statements and mentioned by dropped ones
    watched: frozenset[str]
    #: those of them a dropped statement calls (``name(...)``)
    called: frozenset[str]
    #: the module's import map (imports are never dropped: the analysis reuses it)
    imports: ImportMap

    def is_exact(self, flow) -> bool:
        """Whether the analysis of the pruned source gave what the whole file would."""
        module = flow.scopes[0]
        for name in self.watched:
            if name in module.loaders or name in module.host:
                return False
            kinds = set(flow.module_bindings.get(name, ()))
            kinds.add(module.env.get(name, Kind.UNKNOWN))
            kinds.add(module.evidence.get(name, Kind.UNKNOWN))
            if not kinds <= _INERT:
                return False
        # What a function returns reaches only its direct calls (a function passed
        # as a value, ``filter_fn=checkpoint_filter_fn``, is not called here).
        for name in self.called:
            if name in module.host_returns or module.returns.get(name, Kind.UNKNOWN) not in _INERT:
                return False
        return True


@lru_cache(maxsize=64)
def statement_tokens(rules: tuple[type, ...]) -> frozenset[str] | None:
    """What a top-level statement must mention for ``rules`` to report in it by itself."""
    tokens = rule_tokens(rules)
    if tokens is None:
        return None
    methods = {method for op in CATALOGUE for method in op.methods} | COMPARISON_METHODS | ARRAY_METHODS
    return tokens | {f".{method}" for method in methods}


def prune(
    source: str, tree: ast.Module, tokens: frozenset[str] | None, imports: ImportMap | None = None
) -> Pruned | None:
    """The pruned source, or None when nothing worth the trouble can be dropped.

    ``tokens``: :func:`statement_tokens` of the enabled rules; ``imports``: the module's
    import map, when ``source`` is a part of the module (hidden functions blanked).
    """
    if tokens is None or len(tree.body) < 2:
        return None
    lines = source_lines(source, keepends=True)
    statements = tree.body
    spans = [_span(statement) for statement in statements]
    if not _spans_are_whole_lines(spans, len(lines)):
        return None
    texts = ["".join(lines[start - 1 : end]) for start, end in spans]
    if imports is None:
        imports = imports_from_tree(tree)  # the map the analysis resolves names with
    if any(local.startswith("*") and _is_torch(full) for local, full in imports.aliases.items()):
        return None  # ``from torch import *``: any bare name may be torch
    torch_names = {local for local, full in imports.aliases.items() if _is_torch(full)}
    attribute_tokens = frozenset(token[1:] for token in tokens if token.startswith("."))
    name_tokens = tuple(token for token in tokens if not token.startswith("."))
    alternatives = "|".join(map(re.escape, sorted(torch_names)))
    torch_word = re.compile(rf"\b(?:{alternatives})\b") if torch_names else None
    # In torch-only files ``boxes[:, 2:]`` is taken as a tensor, whatever ``boxes`` is.
    array_subscripts = imports.torch_only

    def seed(index: int) -> bool:
        statement = statements[index]
        code = _without_docstrings_and_comment_lines(statement, texts[index], lines, spans[index])
        if not (
            _text_mentions(code, attribute_tokens, name_tokens, torch_word)
            or (array_subscripts and "[" in code and "," in code)
        ):
            return False  # identifiers are in the text: a miss there is a miss
        # Strings (URLs in tables, messages) and trailing comments mention tokens too: ask the code.
        return _code_mentions(statement, attribute_tokens, name_tokens, torch_names, array_subscripts)

    kept = [seed(index) for index in range(len(statements))]
    if _dropped_chars(texts, kept) < _MIN_DROPPED_FRACTION * len(source):
        return None  # closing over bindings below only keeps more
    defined = [_module_bindings(statement, text) for statement, text in zip(statements, texts)]
    receivers = [
        set() if keep or isinstance(statement, _DEFINITIONS) else _evidence_receivers(statement)
        for statement, keep in zip(statements, kept)
    ]
    _close_over_bindings(kept, [d | r for d, r in zip(defined, receivers)], texts)
    if _dropped_chars(texts, kept) < _MIN_DROPPED_FRACTION * len(source):
        return None
    kept_bindings: set[str] = set()
    for bindings, keep in zip(defined, kept):
        if keep:
            kept_bindings |= bindings
    dropped_text = "".join(text for text, keep in zip(texts, kept) if not keep)
    watched = kept_bindings.intersection(_WORD.findall(dropped_text))
    called = {name for name in watched if _is_called(name, dropped_text)}
    blanked = list(lines)
    for (start, end), keep in zip(spans, kept):
        if not keep:
            for number in range(start - 1, end):
                line = blanked[number]
                blanked[number] = line[len(line.rstrip("\r\n")) :]
    body = [statement for statement, keep in zip(statements, kept) if keep]
    return Pruned(
        source="".join(blanked),
        tree=ast.Module(body=body, type_ignores=[]),
        watched=frozenset(watched),
        called=frozenset(called),
        imports=imports,
    )


def _dropped_chars(texts: list[str], kept: list[bool]) -> int:
    return sum(len(text) for text, keep in zip(texts, kept) if not keep)


def _is_called(name: str, text: str) -> bool:
    """Whether ``text`` holds ``name(`` as a whole word (a literal search first: fast)."""
    for match in re.finditer(re.escape(name) + r"\s*\(", text):
        start = match.start()
        if start == 0 or not (text[start - 1].isalnum() or text[start - 1] in "_."):
            return True
    return False


def _text_mentions(
    text: str, attribute_tokens: frozenset[str], name_tokens: tuple[str, ...], torch_word: re.Pattern | None
) -> bool:
    if "import" in text or "global" in text:
        return True
    if any(token in text for token in name_tokens):
        return True
    if torch_word is not None and torch_word.search(text):
        return True
    return "." in text and not attribute_tokens.isdisjoint(_ATTRIBUTE_NAME.findall(text))


def _without_docstrings_and_comment_lines(
    statement: ast.stmt, text: str, lines: list[str], span: tuple[int, int]
) -> str:
    """The statement's lines less whole-line comments and the docstrings of its
    definitions (both can only be text, never code, wherever they sit)."""
    start, end = span
    skipped: set[int] = set()
    for docstring in _docstrings(statement):
        first, last = docstring.lineno, docstring.end_lineno or docstring.lineno
        if lines[first - 1][: docstring.col_offset].strip():
            continue  # ``def f(): "doc"``: shares its first line with code
        skipped.update(range(first, last + 1))
    if not skipped and "#" not in text:
        return text
    return "".join(
        line for number, line in enumerate(lines[start - 1 : end], start)
        if number not in skipped and not line.lstrip().startswith("#")
    )


def _docstrings(statement: ast.stmt) -> Iterable[ast.Expr]:
    """Docstrings of ``statement`` if it is a definition, and of its class's members."""
    stack: list[ast.stmt] = [statement]
    while stack:
        node = stack.pop()
        if not isinstance(node, _DEFINITIONS):
            continue
        body = node.body
        first = body[0]
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
            and (len(body) == 1 or body[1].lineno > (first.end_lineno or first.lineno))
        ):
            yield first
        if isinstance(node, ast.ClassDef):
            stack.extend(body)


def _is_torch(qualified: str) -> bool:
    return qualified.split(".", 1)[0] == "torch"


def _span(statement: ast.stmt) -> tuple[int, int]:
    decorators = getattr(statement, "decorator_list", ())
    start = min([statement.lineno, *(d.lineno for d in decorators)])
    return start, statement.end_lineno or statement.lineno


def _spans_are_whole_lines(spans: list[tuple[int, int]], line_count: int) -> bool:
    """No two statements share a line (``a = 1; b = 2``) and the lines are all there."""
    previous_end = 0
    for start, end in spans:
        if start <= previous_end or end > line_count:
            return False
        previous_end = end
    return True


def _code_mentions(
    statement: ast.stmt,
    attribute_tokens: frozenset[str],
    name_tokens: tuple[str, ...],
    torch_names: set[str],
    array_subscripts: bool,
) -> bool:
    """Whether the statement's code (not its strings or comments) holds a token."""

    def named(identifier: str | None) -> bool:
        return bool(identifier) and (identifier in torch_names or any(t in identifier for t in name_tokens))

    for node in walk_nodes(statement):
        kind = type(node)
        if kind is ast.Name:
            if named(node.id):
                return True
        elif kind is ast.Attribute:
            if node.attr in attribute_tokens or named(node.attr):
                return True
        elif kind is ast.Constant:
            value = node.value
            if type(value) is str and _ANNOTATION_LIKE.fullmatch(value) and any(named(w) for w in _WORD.findall(value)):
                return True
        elif kind in (ast.arg, ast.keyword):
            if named(node.arg):
                return True
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            if named(node.name):
                return True
        elif kind in (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal):
            return True
        elif kind is ast.Subscript and array_subscripts and type(node.slice) is ast.Tuple and len(node.slice.elts) > 1:
            return True
    return False


def _module_bindings(statement: ast.stmt, text: str) -> set[str]:
    """The module-level names ``statement`` binds (not those local to its functions)."""
    if ":=" in text:  # a walrus can sit in any expression at module level
        return _bindings_anywhere(statement)
    bound: set[str] = set()
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, _DEFINITIONS):
            bound.add(node.name)
            continue
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".", 1)[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Match):
            for case in node.cases:
                bound.update(_bindings_anywhere(case.pattern))
        for target in targets:
            bound.update(n.id for n in walk_nodes(target) if isinstance(n, ast.Name))
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, field, None)
            if isinstance(children, list):
                stack.extend(children)
    return bound


def _bindings_anywhere(root: ast.AST) -> set[str]:
    """Every name ``root`` binds at its own level, expressions included (slow, exact)."""
    bound: set[str] = set()
    stack: list[ast.AST] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPE_NODES):
            if not isinstance(node, ast.Lambda):
                bound.add(node.name)
            # Decorators, defaults and bases run at module level (a walrus there binds here).
            stack.extend(getattr(node, "decorator_list", ()))
            stack.extend(getattr(node, "bases", ()))
            arguments = getattr(node, "args", None)
            if isinstance(arguments, ast.arguments):
                stack.extend(arguments.defaults)
                stack.extend(d for d in arguments.kw_defaults if d is not None)
            continue
        if isinstance(node, COMPREHENSIONS):
            # Only a walrus in a comprehension binds in the enclosing scope.
            stack.extend(n for n in walk_nodes(node) if isinstance(n, ast.NamedExpr))
            continue
        bound.update(names_bound_by(node))
        stack.extend(child_nodes(node))
    return bound


def _evidence_receivers(statement: ast.stmt) -> set[str]:
    """Names module-level code uses as ``name.attr`` or ``name[...]``: module-wide
    evidence about them (``w.append(1)`` says "not a tensor") would go with the
    statement, so it is kept whenever kept code mentions one of them."""
    found: set[str] = set()
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPE_NODES):
            continue  # the evidence pass stops at nested definitions and lambdas
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.value, ast.Name):
            found.add(node.value.id)
        stack.extend(child_nodes(node))
    return found


def _close_over_bindings(kept: list[bool], defined: list[set[str]], texts: list[str]) -> None:
    """Keep every statement binding (or giving evidence about) a name that a kept
    statement mentions, transitively."""
    mentioned: set[str] = set()
    pending = [index for index, keep in enumerate(kept) if keep]
    while pending:
        for index in pending:
            mentioned.update(_WORD.findall(texts[index]))
        pending = [
            index for index, keep in enumerate(kept) if not keep and not defined[index].isdisjoint(mentioned)
        ]
        for index in pending:
            kept[index] = True
