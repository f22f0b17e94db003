"""Where a node sits in the module, and straight-line def-use within one block.

Fixers receive only the reported node; these helpers find its parents, the
statement and block around it, and the assignments that feed it. The parent
map is built once per analysed module and kept on the rule context.

The def-use questions are deliberately *straight-line*: a binding is followed
only within the statement list that holds it, and any doubt (a rebinding in a
nested block, a name used in a way we do not model) answers "no fix".
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from synclint.analysis.flow import target_name_nodes
from synclint.traversal import TRIVIA
from synclint.traversal import walk as fast_walk

_FUNCTIONS = (cst.FunctionDef, cst.Lambda)
#: Nodes that open a namespace of their own.
_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


class _ParentMap(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._stack:
            self.parents[node] = self._stack[-1]
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()


def parents(rule) -> dict[cst.CSTNode, cst.CSTNode]:
    """``{node: parent}`` for the module ``rule`` is analysing (built once per module)."""
    context = rule.context
    cached = context.__dict__.get("_fix_parents")
    if cached is None or cached[0] is not context.module:
        visitor = _ParentMap()
        # Whitespace and punctuation are never asked about; skipping them halves the walk.
        fast_walk(context.module, visitor, TRIVIA)
        cached = (context.module, visitor.parents)
        context.__dict__["_fix_parents"] = cached
    return cached[1]


def ancestors(rule, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    table = parents(rule)
    while node in table:
        node = table[node]
        yield node


def parent(rule, node: cst.CSTNode) -> cst.CSTNode | None:
    return parents(rule).get(node)


def enclosing_function(rule, node: cst.CSTNode) -> cst.FunctionDef | None:
    for ancestor in ancestors(rule, node):
        if isinstance(ancestor, cst.FunctionDef):
            return ancestor
        if isinstance(ancestor, (cst.Lambda, cst.ClassDef)):
            return None
    return None


def enclosing_class(rule, node: cst.CSTNode) -> cst.ClassDef | None:
    for ancestor in ancestors(rule, node):
        if isinstance(ancestor, cst.ClassDef):
            return ancestor
    return None


@dataclass(frozen=True)
class Place:
    """A statement and the block (statement list) it belongs to."""

    statement: cst.BaseStatement
    block: Sequence[cst.BaseStatement]
    index: int

    @property
    def before(self) -> Sequence[cst.BaseStatement]:
        return self.block[: self.index]

    @property
    def after(self) -> Sequence[cst.BaseStatement]:
        return self.block[self.index + 1 :]


def place_of(rule, node: cst.CSTNode) -> Place | None:
    """The statement holding ``node`` (``node`` itself if it is one) and its block."""
    table = parents(rule)
    statement = node
    while statement in table and not isinstance(statement, cst.BaseStatement):
        statement = table[statement]
    if not isinstance(statement, cst.BaseStatement):
        return None
    owner = table.get(statement)
    body = getattr(owner, "body", None)
    if not isinstance(body, (list, tuple)):
        return None
    for index, candidate in enumerate(body):
        if candidate is statement:
            return Place(statement, body, index)
    return None


# -- names -------------------------------------------------------------------------------


class _NameCollector(cst.CSTVisitor):
    """Every ``Name`` that refers to a variable (not attribute or keyword names)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[cst.Name] = []

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node)


def names_in(node: cst.CSTNode) -> list[cst.Name]:
    collector = _NameCollector()
    node.visit(collector)
    return collector.names


def name_values(node: cst.CSTNode) -> set[str]:
    return {name.value for name in names_in(node)}


def occurrences(name: str, nodes: Sequence[cst.CSTNode]) -> list[cst.Name]:
    return [n for node in nodes for n in names_in(node) if n.value == name]


def fresh_name(preferred: str, scope: cst.CSTNode) -> str:
    """``preferred`` unless the scope already uses it; then ``preferred_1``, ..."""
    taken = name_values(scope)
    candidate, suffix = preferred, 0
    while candidate in taken:
        suffix += 1
        candidate = f"{preferred}_{suffix}"
    return candidate


def reserve_name(rule, preferred: str, scope: cst.CSTNode) -> str:
    """:func:`fresh_name` that also avoids the names other proposals for this module
    reserved in ``scope``: the proposals of one pass are computed on the same
    original tree, and two that introduce the same name would clobber each other."""
    context = rule.context
    cached = context.__dict__.get("_fix_reserved_names")
    if cached is None or cached[0] is not context.module:
        cached = (context.module, {})
        context.__dict__["_fix_reserved_names"] = cached
    reserved = cached[1].setdefault(id(scope), set())
    taken = name_values(scope) | reserved
    candidate, suffix = preferred, 0
    while candidate in taken:
        suffix += 1
        candidate = f"{preferred}_{suffix}"
    reserved.add(candidate)
    return candidate


def same(a: cst.CSTNode | None, b: cst.CSTNode | None) -> bool:
    """Structurally equal code (formatting aside)."""
    if a is None or b is None:
        return False
    return code(a) == code(b)


def code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node).strip()


def expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


# -- straight-line bindings --------------------------------------------------------------


def simple_assignment(statement: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    """``(name, value)`` for a line holding exactly ``name = value``."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    assign = statement.body[0]
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1):
        return None
    target = assign.targets[0].target
    if not isinstance(target, cst.Name):
        return None
    return target.value, assign.value


def binds(statement: cst.CSTNode, name: str) -> bool:
    """Whether ``statement`` may (re)bind ``name`` anywhere inside it."""
    return any(_binds_here(node, name) for node in _walk(statement))


def _binds_here(node: cst.CSTNode, name: str) -> bool:
    targets: list[cst.CSTNode] = []
    if isinstance(node, cst.AssignTarget):
        targets.append(node.target)
    elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
        targets.append(node.target)
    elif isinstance(node, (cst.For, cst.CompFor)):
        targets.append(node.target)
    elif isinstance(node, cst.NamedExpr):
        targets.append(node.target)
    elif isinstance(node, cst.AsName):
        targets.append(node.name)
    elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return node.name.value == name
    elif isinstance(node, (cst.Global, cst.Nonlocal)):
        return any(item.name.value == name for item in node.names)
    return any(n.value == name for target in targets for n in target_name_nodes(target))


class _Collector(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.nodes: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.nodes.append(node)
        return True


def walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node`` and all its descendants but whitespace and punctuation, in source
    order (one traversal; libcst's ``children`` property re-visits on every access)."""
    collector = _Collector()
    fast_walk(node, collector, TRIVIA)
    return collector.nodes


_walk = walk


class _ScopeCollector(cst.CSTVisitor):
    def __init__(self, scope: cst.CSTNode) -> None:
        super().__init__()
        self.scope = scope
        self.nodes: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.nodes.append(node)
        return node is self.scope or not isinstance(node, _SCOPES)


def scope_nodes(scope: cst.CSTNode) -> list[cst.CSTNode]:
    """The nodes of ``scope`` (a module or a function's body) that belong to its own
    namespace: a nested function, lambda or class is listed (a ``def`` binds its name
    here), what is inside it is not (its bindings are its own)."""
    collector = _ScopeCollector(scope)
    fast_walk(scope, collector, TRIVIA)
    return collector.nodes


def mutates(statement: cst.CSTNode, names: set[str], qualify=None) -> bool:
    """Whether ``statement`` may change the value behind any of ``names``:
    rebinding, ``x[...] = ``, ``x.attr = ``, an in-place method (``x.add_(...)``)
    or passing it to a call (which might mutate it) other than an out-of-place
    ``torch`` function (``qualify`` resolves imported names)."""
    for node in _walk(statement):
        if any(_binds_here(node, name) for name in names):
            return True
        if isinstance(node, (cst.AssignTarget, cst.AugAssign)):
            target = node.target
            if isinstance(target, (cst.Subscript, cst.Attribute)) and _root(target) in names:
                return True
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and _root(func.value) in names:
                return True
            if _pure_torch_call(node, qualify):
                continue
            # A bare name handed to a call may be mutated by it; `self.n` reads are not.
            if any(isinstance(arg.value, cst.Name) and arg.value.value in names for arg in node.args):
                return True
    return False


def _pure_torch_call(call: cst.Call, qualify) -> bool:
    qualified = qualify(call.func) if qualify is not None else None
    return (
        qualified is not None
        and qualified.startswith("torch.")
        and not qualified.endswith("_")
        and not any(a.keyword is not None and a.keyword.value == "out" for a in call.args)
    )


def _root(node: cst.CSTNode) -> str | None:
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        node = node.value if not isinstance(node, cst.Call) else node.func
    return node.value if isinstance(node, cst.Name) else None


@dataclass(frozen=True)
class Binding:
    """``name = value`` at ``block[index]``."""

    name: str
    value: cst.BaseExpression
    statement: cst.SimpleStatementLine
    index: int


def reaching_binding(block: Sequence[cst.BaseStatement], index: int, name: str) -> Binding | None:
    """The ``name = value`` line in ``block`` before ``index`` whose value reaches
    ``block[index]``; None if the name is bound any other way on the way."""
    for position in range(index - 1, -1, -1):
        statement = block[position]
        assignment = simple_assignment(statement)
        if assignment is not None and assignment[0] == name:
            return Binding(name, assignment[1], statement, position)  # type: ignore[arg-type]
        if binds(statement, name):
            return None
    return None


def stable_between(
    block: Sequence[cst.BaseStatement], start: int, stop: int, names: set[str], qualify=None
) -> bool:
    """No statement strictly between ``start`` and ``stop`` changes any of ``names``."""
    return not any(mutates(block[i], names, qualify) for i in range(start + 1, stop))
