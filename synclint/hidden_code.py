"""Leave out of the libcst parse the functions whose every finding would be hidden.

A default ``check`` (no ``--include-cold``) shows no finding in cold code, nor,
in a project whose steps the index found, in code that nothing reaches from
them (see docs/faq.md). In a library that is most of the code: constructors,
``reset_parameters``, ``extra_repr``, helpers that only tests or export code
call. libcst's parser and the analysis are most of a cold run, so such
functions are blanked before the parse, as :mod:`synclint.pruning` blanks
top-level statements: line numbers, columns and the kept code do not move.

A function defined at module level or in a class body (at any depth of
classes) is **left out** when all of these hold:

* **Its findings would be hidden.** The index gives it, and every function
  nested in it, a cold context, or no context at all (unreached, in a project
  the index saw whole) while neither it nor a function nested in it is named
  like a step (``forward``, a loss, ``training_step``, ``step``: such code is
  shown even when unreached); and no loop over batches inside it is hot.
* **None would be shown for its own sake.** Its code mentions no accelerator
  (a ``device=`` keyword argument, ``.cuda()``, ``"cuda:0"`` or a string spelled
  with escapes, ``current_device``, an import of one; ``xpu``, ``npu`` and
  ``mps`` alike), nor a name that may stand for one: bound at module level by a
  statement that mentions one or reads such a name (``TARGET = DEVICE``), or
  imported from an accelerator's module anywhere in the file (the analysis
  resolves imports module-wide). An op that syncs on every call is shown
  anywhere when what it reads is visibly made on one. Nor does it hold a token
  of a rule whose findings are shown in any context (an unpinned
  ``DataLoader``), or a name imported as one (``DataLoader as Loader``).
* **Kept code learns nothing from it.** It declares no ``global`` or
  ``nonlocal``. It binds no name that module-level code binds (fixes prove a
  module-level name from all of its bindings in the module); at module level
  its own name is none of those, nor an import's, nor ``torch`` (fixes decline
  on ``def torch``). No attribute it binds on ``self`` (or registers
  as a buffer or parameter, by position or keyword) is named in kept code: a
  class's attribute kinds come from all of its methods. And when it returns a
  value or annotates its return, kept code never calls its name (a comment or
  a continued line may come before the parenthesis): what a function returns
  is known to its later callers in the file. Nor, for a module-level function
  of a file that holds a token of a rule that follows values into the
  module's functions (SL402's ``DataLoader``), does kept code call it: a
  loader built in kept code is followed through ``run(model, loader)`` into
  the copies of the function ``run`` hands it to.
* **The whole file's analysis would not fail on it.** It nests at most
  ``_MAX_DEPTH`` levels (deeper code may exhaust the stack: the file's one
  SL000 must stay). A file holding a form feed is left whole: libcst rejects
  some that CPython accepts.

"Kept code" is every line not left out, less docstrings and comment lines
(``>>> y = helper(x)`` in a docstring calls nothing), closed transitively: a
function that fails the last test stays, and what it names counts too. Names
are compared as Python reads them (NFKC-normalised; a name next to an ASCII
letter, digit or underscore is another name). A class body left with no
statement gets a ``pass`` in place of the first method left out.

Fixers asked about code outside the statements of functions (module level, a
class body, a lambda) look for names module-wide; the engine then analyses the
whole file (``Report.fix_read_the_module``).

With ``--include-cold`` nothing is left out, and results of the two kinds of
run are cached apart (``runner``). ``tests/test_hidden_code.py`` checks each
condition both ways, and that the shown findings on every rule example and
``examples/`` are the same with and without.
"""

from __future__ import annotations

import ast
import copy
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from synclint.analysis.imports import ImportMap, imports_from_tree
from synclint.analysis.step_names import names_a_step
from synclint.project.facts import FileFacts
from synclint.project.hotness import HOT, is_hidden
from synclint.project.loss_names import is_loss_class
from synclint.project.scopes import child_nodes, names_bound_by, walk_nodes
from synclint.sources import source_lines

#: What may stand between two tokens of one expression: whitespace, a comment, a
#: backslash that continues the line (``helper  # why`` then ``(x)`` on the next line).
#: A comment must run to its line's end, so each text has one way to match (no backtracking).
_GAP = r"(?:\s|\\|#[^\r\n]*[\r\n])*"
#: What code that makes or names a tensor or device on an accelerator must hold (see
#: ``DeviceInference.made_on_accelerator``): a ``device=`` keyword argument, ``.cuda()``-style
#: moves, ``"cuda:0"``-style strings (or a string spelled with escapes, ``"\x63uda"``),
#: ``torch.cuda.current_device()``. Text matching this is then read node by node
#: (:func:`_on_accelerator`): ``device=None`` in a signature is no keyword argument.
_ACCELERATOR = re.compile(r"\b(?:cuda|xpu|npu|mps)|current_device|device%s=(?!=)|\\(?:[xuUN]|[0-7])" % _GAP)
_ACCELERATOR_NAMES = frozenset({"cuda", "xpu", "npu", "mps", "current_device"})
_ACCELERATOR_PREFIXES = ("cuda", "xpu", "npu", "mps")
#: Names as Python reads them (after NFKC normalisation, :func:`_normalised`).
_WORD = re.compile(r"\w+")
#: Roots of the modules fixes name or import (``proofs.module_prefix``): a module-level
#: definition of one makes them decline.
_FIX_MODULES = frozenset({"torch"})
#: Levels of syntax a function may nest and still be left out. Far deeper than real code
#: (a 600-term sum nests 600 levels), the whole file's analysis may run out of stack and
#: report SL000 instead: code that deep must reach the analysis of the default run too.
_MAX_DEPTH = 100
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFINITIONS = (ast.Module, ast.ClassDef, *_FUNCTIONS)
#: Fields holding the statements of a block (``handlers`` and ``cases`` hold blocks).
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")
_REGISTERS = frozenset({"register_buffer", "register_parameter"})


@dataclass
class _Candidate:
    """A function that may be left out, and what kept code must not depend on."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    start: int  # first line (its first decorator's)
    end: int
    indent: str
    text: str
    #: attributes it binds on ``self`` or registers
    attributes: set[str]
    returns_value: bool
    #: its class (which needs a ``pass`` if it loses every statement), or None
    owner: ast.ClassDef | None
    #: a call of it in kept code keeps it (see :func:`_close_over_kept_code`)
    called_matters: bool = False


class Blanked(NamedTuple):
    """A module's source with its hidden functions blanked."""

    source: str
    tree: ast.Module  # CPython's tree of ``source``
    imports: ImportMap  # the whole module's (imports are resolved module-wide)


def blank_hidden_functions(
    source: str, tree: ast.Module, facts: FileFacts, rules: tuple[type, ...]
) -> Blanked | None:
    """``source`` with the hidden functions blanked, and its stdlib tree; None when
    nothing is left out. ``tree``: the stdlib tree of ``source``; ``rules``: the enabled rules.
    """
    tokens = shown_anywhere_tokens(rules)
    if tokens is None or not facts.whole_project or facts.file_cold is not None:
        return None  # unreached code is shown; a cold file is left to the other checks
    if "\f" in source:
        # libcst's tokenizer rejects some form feeds that CPython accepts ("no matching
        # outer block for dedent"): blanking the line that holds one would turn the
        # whole file's syntax error into findings.
        return None
    lines = source_lines(source, keepends=True)
    imports = imports_from_tree(tree)
    module = _module_names(tree, lines, imports, tokens)
    candidates = [
        candidate
        for node, cls, owner in _definitions(tree.body, None, None)
        if (candidate := _candidate(node, cls, owner, lines, facts, tokens, module)) is not None
    ]
    dropped = _close_over_kept_code(candidates, lines, tree, _follows_module_calls(rules, source))
    if not dropped:
        return None
    blanked = list(lines)
    padded: set[int] = set()  # candidates whose first line holds the ``pass`` of an emptied class
    for candidate in dropped:
        for number in range(candidate.start - 1, candidate.end):
            line = blanked[number]
            blanked[number] = line[len(line.rstrip("\r\n")) :]
    emptied = {id(c.owner) for c in dropped if c.owner is not None and _emptied(c.owner, dropped)}
    for candidate in dropped:
        if id(candidate.owner) in emptied:
            emptied.discard(id(candidate.owner))
            padded.add(id(candidate))
            line = blanked[candidate.start - 1]
            blanked[candidate.start - 1] = f"{candidate.indent}pass{line}"
    return Blanked("".join(blanked), _tree_without(tree, dropped, padded), imports)


def _definitions(body: list[ast.stmt], cls: str | None, owner: ast.ClassDef | None) -> Iterator[tuple]:
    """(function, its class's name, its class) at module level and in class bodies."""
    for statement in body:
        if isinstance(statement, _FUNCTIONS):
            yield statement, cls, owner
        elif isinstance(statement, ast.ClassDef):
            yield from _definitions(statement.body, statement.name, statement)


def _candidate(
    node, cls: str | None, owner, lines: list[str], facts: FileFacts, tokens: frozenset[str], module: _ModuleNames
) -> _Candidate | None:
    """The function, if it passes the tests of the module docstring that concern it alone."""
    # A definition always has whole lines to itself: nothing can precede ``def`` or ``@``
    # on its first line, and what follows its body on the last line is part of the body.
    start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
    end = node.end_lineno or node.lineno
    if not _hidden(facts, start, end, names_a_step(node.name, cls)):
        return None
    text = "".join(lines[start - 1 : end])
    if any(token in text for token in tokens) or (_ACCELERATOR.search(text) and _on_accelerator(node)):
        return None
    if module.telling and not module.telling.isdisjoint(_WORD.findall(_normalised(text))):
        return None
    if owner is None and (node.name in module.bound or node.name in module.imported or node.name in _FIX_MODULES):
        return None  # fixes prove a module-level name from all of its bindings, and decline on ``def torch``
    first = lines[start - 1]
    indent = first[: len(first) - len(first.lstrip(" \t\f"))]
    attributes: set[str] = set()
    returns_value = node.returns is not None
    for depth, level in enumerate(_levels(node)):
        if depth > _MAX_DEPTH:
            return None
        for inner in level:
            kind = type(inner)
            if kind is ast.Attribute and type(inner.ctx) is not ast.Load:
                value = inner.value
                if type(value) is ast.Name and value.id == "self":
                    attributes.add(inner.attr)
            elif kind is ast.Call:
                func = inner.func
                if type(func) is ast.Attribute and func.attr in _REGISTERS:
                    # The collector reads the first argument, ``name=`` included.
                    for name in [*inner.args[:1], *(k.value for k in inner.keywords)]:
                        if type(name) is ast.Constant and type(name.value) is str:
                            attributes.add(name.value)
            elif kind is ast.Return and inner.value is not None:
                returns_value = True
            elif kind in (ast.Global, ast.Nonlocal):
                return None  # binds names outside itself
            elif inner is not node:
                for name in names_bound_by(inner):
                    if name in module.bound:
                        return None  # fixes prove a module-level name from all of its bindings
    return _Candidate(node, start, end, indent, text, attributes, returns_value, owner)


def _levels(root: ast.AST) -> Iterator[list[ast.AST]]:
    """The nodes of ``root`` level by level (``[root]``, its children, theirs, ...)."""
    level = [root]
    while level:
        yield level
        level = [child for node in level for child in child_nodes(node)]


def _on_accelerator(root: ast.AST) -> bool:
    """Whether ``root`` may make or name a tensor or device on an accelerator: a
    ``device=`` keyword argument, a name or attribute ``cuda`` (``xpu``, ``npu``, ``mps``,
    ``current_device``), an import of one, or a string (or f-string) starting with one."""
    for node in walk_nodes(root):
        kind = type(node)
        if kind is ast.alias or kind is ast.ImportFrom:
            if _names_accelerator(node.name if kind is ast.alias else node.module or ""):
                return True
        elif kind is ast.keyword:
            if node.arg == "device":
                return True
        elif kind is ast.Attribute:
            if node.attr in _ACCELERATOR_NAMES:
                return True
        elif kind is ast.Name:
            if node.id in _ACCELERATOR_NAMES:
                return True
        elif kind is ast.Constant:
            if type(node.value) is str and node.value.startswith(_ACCELERATOR_PREFIXES):
                return True
    return False


def _hidden(facts: FileFacts, start: int, end: int, named_step: bool) -> bool:
    """Every finding on lines ``start`` to ``end`` would be hidden: each function there
    is cold or unreached (the file's whole project has steps), and no hot loop over
    batches lies inside. Unreached code is shown in a function named like a step
    (``named_step``: the one defined at ``start``; a nested ``def step`` too), unless it
    is in a class nothing in the project names."""
    for first, last, name, context in facts.functions:
        if first > end:
            break
        if (
            first >= start
            and last <= end
            and not is_hidden(context.kind, context.why)  # cold, or in a class nothing names
            and (named_step or context.is_hot or context.why or _named_like_a_step(name))
        ):
            return False
    return not any(region.kind == HOT and first <= end and last >= start for first, last, region in facts.regions)


def _named_like_a_step(qualname: str) -> bool:
    """:func:`names_a_step` for a function the index names ``outer.Cls.inner``, taking
    every enclosing name for its class (the analysis takes the innermost class's)."""
    *enclosing, name = qualname.split(".")
    return names_a_step(name, None) or any(is_loss_class(part) for part in enclosing)


@dataclass
class _ModuleNames:
    """What module-level code (outside definitions) binds."""

    bound: set[str]
    imported: set[str]
    #: Names whose mention may make a finding shown: bound at module level by statements
    #: that mention an accelerator or read such a name (``TARGET = DEVICE`` after
    #: ``DEVICE = "cuda"``: a function reading one may read a tensor made on it), and
    #: names imported (anywhere in the module: the analysis resolves them module-wide)
    #: from an accelerator's module or as a rule's token (``DataLoader as Loader``).
    telling: set[str]


def _module_names(tree: ast.Module, lines: list[str], imports: ImportMap, tokens: frozenset[str]) -> _ModuleNames:
    names = _ModuleNames(set(), set(), set())
    statements = []  # (names it binds, names it reads, whether it mentions an accelerator)
    for statement in tree.body:
        if isinstance(statement, (*_FUNCTIONS, ast.ClassDef)):
            continue
        text = "".join(lines[statement.lineno - 1 : statement.end_lineno or statement.lineno])
        bound: set[str] = set()
        for node in walk_nodes(statement):
            for name in names_bound_by(node):
                bound.add(name)
                if type(node) is ast.alias:
                    names.imported.add(name)
        names.bound |= bound
        mentions = _ACCELERATOR.search(text) is not None and _on_accelerator(statement)
        statements.append((bound, set(_WORD.findall(_normalised(text))), mentions))
    names.telling = {
        local
        for local, full in imports.aliases.items()
        if _names_accelerator(full) or any(token in full for token in tokens)
    }
    changed = True
    while changed:  # until no statement reads a name the last round added
        changed = False
        for bound, read, mentions in statements:
            if not bound <= names.telling and (mentions or not read.isdisjoint(names.telling)):
                names.telling |= bound
                changed = True
    return names


def _names_accelerator(dotted: str) -> bool:
    """``torch.cuda.current_device``, ``torch.xpu``: a dotted name through an accelerator's module."""
    return not _ACCELERATOR_NAMES.isdisjoint(dotted.split("."))


def _normalised(text: str) -> str:
    """``text`` with identifiers as Python reads them: NFKC-normalised (``ﬁle`` is ``file``)."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def _close_over_kept_code(
    candidates: list[_Candidate], lines: list[str], tree: ast.Module, follows_calls: bool = False
) -> list[_Candidate]:
    """The candidates no kept code depends on: none of their ``self`` attributes is named
    in kept code, and none that returns a value is called there (transitively); with
    ``follows_calls`` (a rule follows values into the module's functions), no module-level
    function is called there either: SL402 follows a loader built in kept code through
    ``run(model, loader)`` into the copies of the function ``run`` hands it to.
    Docstrings and comment lines are prose, not code (``>>> mask = causal_lower_right(...)``)."""
    for candidate in candidates:
        candidate.called_matters = candidate.returns_value or (follows_calls and candidate.owner is None)
    needed = {name for c in candidates for name in c.attributes} | {c.node.name for c in candidates if c.called_matters}
    if not needed:
        return candidates
    prose = _docstring_lines(tree, lines)
    lines = [
        "" if number in prose or line.lstrip().startswith("#") else _normalised(line)
        for number, line in enumerate(lines, 1)
    ]
    # A name next to any character but an ASCII letter, digit or underscore counts as
    # mentioned (``maß)``, where ``\b`` would see no boundary); a call may have a comment or
    # a continued line before its parenthesis.
    mention = re.compile(
        r"(?<![0-9A-Za-z_])(%s)(?![0-9A-Za-z_])(%s\()?" % ("|".join(map(re.escape, sorted(needed))), _GAP)
    )

    def mentions(text: str, words: set[str], called: set[str]) -> None:
        for match in mention.finditer(text):
            words.add(match[1])
            if match[2]:
                called.add(match[1])

    words: set[str] = set()
    called: set[str] = set()
    previous = 0
    for candidate in sorted(candidates, key=lambda c: c.start):
        mentions("".join(lines[previous : candidate.start - 1]), words, called)
        previous = candidate.end
    mentions("".join(lines[previous:]), words, called)
    dropped = list(candidates)
    changed = True
    while changed:
        changed = False
        for candidate in list(dropped):
            if not candidate.attributes.isdisjoint(words) or (candidate.called_matters and candidate.node.name in called):
                dropped.remove(candidate)
                mentions("".join(lines[candidate.start - 1 : candidate.end]), words, called)
                changed = True
    return dropped


def _docstring_lines(tree: ast.Module, lines: list[str]) -> set[int]:
    """The lines of docstrings that have their lines to themselves (module, classes,
    functions at any depth); only statement lists are walked."""
    found: set[int] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        body = getattr(node, "body", None)
        if type(body) is not list:
            continue
        first = body[0] if body and isinstance(node, _DEFINITIONS) else None
        if (
            type(first) is ast.Expr
            and type(first.value) is ast.Constant
            and type(first.value.value) is str
            and not lines[first.lineno - 1][: first.col_offset].strip()  # (the offset counts UTF-8 bytes:
            and _ends_line(lines[first.end_lineno - 1], first.end_col_offset)  # whitespace before it is ASCII)
        ):
            found.update(range(first.lineno, first.end_lineno + 1))
        for field in _BLOCKS:
            children = getattr(node, field, None)
            if type(children) is list:
                stack.extend(child for child in children if not isinstance(child, ast.expr))
    return found


def _ends_line(line: str, end_column: int) -> bool:
    """Only spaces or a comment after the UTF-8 offset ``end_column`` of ``line``."""
    rest = line.encode("utf-8")[end_column:].decode("utf-8", "replace").strip()
    return not rest or rest.startswith("#")


def _emptied(owner: ast.ClassDef, dropped: list[_Candidate]) -> bool:
    """Whether every statement of the class body is left out."""
    gone = {id(candidate.node) for candidate in dropped}
    return all(id(statement) in gone for statement in owner.body)


def _tree_without(tree: ast.Module, dropped: list[_Candidate], padded: set[int]) -> ast.Module:
    """What CPython parses from the blanked source, built from ``tree`` without a parse:
    the left-out definitions removed, a ``Pass`` where one was written, and the classes
    that lost statements copied, ending where their last statement now ends.
    ``tests/test_hidden_code.py`` compares it with a parse, positions included."""
    gone = {id(candidate.node): candidate for candidate in dropped}
    changed_classes = {id(candidate.owner) for candidate in dropped if candidate.owner is not None}

    def without(body: list[ast.stmt]) -> list[ast.stmt]:
        kept: list[ast.stmt] = []
        for statement in body:
            candidate = gone.get(id(statement))
            if candidate is not None:
                if id(candidate) in padded:
                    column = len(candidate.indent)  # ASCII whitespace: characters are bytes
                    kept.append(ast.Pass(lineno=candidate.start, col_offset=column,
                                         end_lineno=candidate.start, end_col_offset=column + 4))
                continue
            if isinstance(statement, ast.ClassDef) and _holds(statement, changed_classes):
                statement = copy.copy(statement)
                statement.body = without(statement.body)
                statement.end_lineno = statement.body[-1].end_lineno
                statement.end_col_offset = statement.body[-1].end_col_offset
            kept.append(statement)
        return kept

    return ast.Module(body=without(tree.body), type_ignores=tree.type_ignores)


def _holds(cls: ast.ClassDef, changed_classes: set[int]) -> bool:
    """Whether ``cls`` or a class nested in its body lost a statement."""
    return id(cls) in changed_classes or any(
        isinstance(statement, ast.ClassDef) and _holds(statement, changed_classes) for statement in cls.body
    )


def _follows_module_calls(rules: tuple[type, ...], source: str) -> bool:
    """Whether an enabled rule that follows values handed to the module's functions may
    report in ``source``: it holds one of the rule's tokens (``DataLoader``; a rule that
    declares none may report anywhere)."""
    for rule in rules:
        if getattr(rule, "follows_module_calls", False):
            tokens = getattr(rule, "TOKENS", None)
            if tokens is None or any(token in source for token in tokens):
                return True
    return False


@lru_cache(maxsize=64)
def shown_anywhere_tokens(rules: tuple[type, ...]) -> frozenset[str] | None:
    """Tokens of the rules whose findings are shown in any context (``hot_path_only``
    is false); None when one of them declares none (any code may hold its findings)."""
    tokens: set[str] = set()
    for rule in rules:
        if not getattr(rule, "hot_path_only", True):
            declared = getattr(rule, "TOKENS", None)
            if declared is None:
                return None
            tokens |= declared
    return frozenset(tokens)
