"""Source positions for a few nodes, without computing them for the whole module.

libcst's ``PositionProvider`` regenerates the code of the entire module and
records a range for every node; it costs more than the analysis itself. A
finding needs the positions of a handful of nodes, all inside a few top-level
statements. So only those statements are regenerated (each as a one-statement
module), and each statement's first line in the file is taken from the stdlib
``ast`` parse (about ten times faster than libcst's). A class or function is
entered rather than regenerated whole when the nodes lie in its body's
statements: then only those statements are, inside the body's indentation (a
finding in one method of a 3,000-line class costs that method). Every statement's offset
is checked against the source text; if anything does not line up (syntax the
running Python cannot parse, unusual line endings), the whole-module provider
is used instead, so the result is always libcst's.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from synclint.traversal import walk

_DECORATED = (cst.FunctionDef, cst.ClassDef)


def positions_for(
    module: cst.Module, source: str, nodes: Iterable[cst.CSTNode], tree: ast.Module | None = None
) -> Mapping[cst.CSTNode, CodeRange]:
    """Ranges for (at least) ``nodes``, equal to libcst's ``PositionProvider``.

    ``tree``: the stdlib tree of ``source`` when the caller has it (parsed otherwise).
    """
    nodes = list(nodes)
    try:
        found = _by_statement(module, source, {id(node) for node in nodes}, tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        found = None
    if found is None or any(node not in found for node in nodes):  # e.g. a node of the header
        return _whole_module(module)
    return found


def _whole_module(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    recorded = _record(module, module, first_line=1)
    if recorded is None:
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return recorded


def _record(module: cst.Module, node: cst.CSTNode, first_line: int, indents: Sequence[str] = ()) -> dict | None:
    """Run the position-recording codegen of ``PositionProvider`` over ``node`` alone.

    ``MetadataWrapper.resolve`` also makes a full (empty) visitor pass over the
    module, which costs about half as much again; this calls the provider's
    codegen state directly, starting at ``first_line`` inside blocks indented by
    ``indents``. None if libcst's internals have moved (the caller then uses the
    public API).
    """
    try:
        from libcst.metadata.position_provider import PositionProvidingCodegenState

        provider = PositionProvider()
        state = PositionProvidingCodegenState(
            default_indent=module.default_indent,
            default_newline=module.default_newline,
            provider=provider,
            indent_tokens=list(indents),
        )
        state.line = first_line
        node._codegen(state)
        return provider._computed
    except (ImportError, AttributeError, TypeError):
        return None


class _Contains(cst.CSTVisitor):
    """Does a subtree hold any of the wanted nodes? Stops descending once it does."""

    def __init__(self, wanted: set[int]) -> None:
        super().__init__()
        self.wanted = wanted
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.wanted:
            self.found = True
        return not self.found

    def on_leave(self, original_node: cst.CSTNode) -> None:
        pass


def _by_statement(module: cst.Module, source: str, wanted: set[int], tree: ast.Module | None) -> dict | None:
    found: dict[cst.CSTNode, CodeRange] = {}
    body = (tree if tree is not None else ast.parse(source)).body
    if not _record_holding(module, list(module.body), body, wanted, source.split("\n"), [], found):
        return None
    return found


def _record_holding(
    module: cst.Module,
    statements: list[cst.BaseStatement],
    body: list[ast.stmt],
    wanted: set[int],
    lines: list[str],
    indents: list[str],
    found: dict,
) -> bool:
    """Record the positions in those of ``statements`` (``body`` in CPython's tree) that
    hold a wanted node, inside blocks indented by ``indents``; False when the trees or
    the source do not line up (the caller then falls back to the whole module)."""
    holding = [index for index, statement in enumerate(statements) if _holds(statement, wanted)]
    if not holding:
        return False
    matched = _matching_nodes(statements, body)
    if matched is None:
        return False
    for index in holding:
        statement, node = statements[index], matched[index]
        block = statement.body if isinstance(statement, _DECORATED) else None
        if isinstance(block, cst.IndentedBlock) and not _holds_outside(statement, block, wanted):
            indent = module.default_indent if block.indent is None else block.indent
            if not _record_holding(module, list(block.body), node.body, wanted, lines, [*indents, indent], found):
                return False
            continue
        decorators = getattr(node, "decorator_list", None)
        start = _code_start(statement, decorators[0].lineno if decorators else node.lineno, lines)
        if start is None:
            return False
        recorded = _record(module, statement, first_line=start, indents=indents)
        if recorded is None:
            return False
        found.update(recorded)
    return True


def _holds(node: cst.CSTNode, wanted: set[int]) -> bool:
    finder = _Contains(wanted)
    walk(node, finder)
    return finder.found


def _holds_outside(statement: cst.CSTNode, block: cst.IndentedBlock, wanted: set[int]) -> bool:
    """A wanted node is ``statement`` or ``block`` or lies in the statement's header
    (decorators, parameters, bases), not in the block's statements."""
    if id(statement) in wanted or id(block) in wanted:
        return True
    return any(_holds(child, wanted) for child in statement.children if child is not block)


def _matching_nodes(statements: list[cst.BaseStatement], body: list[ast.stmt]) -> list[ast.stmt] | None:
    """The first CPython statement of each libcst statement (a line of ``a; b`` holds several)."""
    result: list[ast.stmt] = []
    position = 0
    for statement in statements:
        if position >= len(body):
            return None
        result.append(body[position])
        position += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    return result if position == len(body) else None


def _code_start(statement: cst.BaseStatement, first_line: int, lines: list[str]) -> int | None:
    """The line where ``statement``'s code (its leading blank/comment lines first) starts.

    None when the source does not show those leading lines just above
    ``first_line``: then the ast/libcst correspondence is not what we assumed.
    """
    leading = list(statement.leading_lines)
    decorators = getattr(statement, "decorators", ()) if isinstance(statement, _DECORATED) else ()
    if decorators:
        leading += list(decorators[0].leading_lines)
    start = first_line - len(leading)
    if start < 1 or first_line > len(lines):
        return None
    for offset, empty in enumerate(leading):
        text = lines[start - 1 + offset].strip()
        expected = empty.comment.value if empty.comment is not None else ""
        if text != expected.strip():
            return None
    text = lines[first_line - 1].lstrip()
    keyword = "@" if decorators else _KEYWORDS.get(type(statement))
    if not text or text.startswith("#") or (keyword and not text.startswith((keyword, "async"))):
        return None
    return start


_KEYWORDS = {
    cst.FunctionDef: "def", cst.ClassDef: "class", cst.If: "if", cst.For: "for",
    cst.While: "while", cst.Try: "try", cst.TryStar: "try", cst.With: "with", cst.Match: "match",
}
