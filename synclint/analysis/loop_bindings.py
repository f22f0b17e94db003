"""What the body of a loop binds, and to what: the state its second pass starts from.

Flow reads a loop's body once, in order, so a name bound before the loop keeps its first
binding up to where the body rebinds it; from the second pass on it holds what the
first pass bound there instead (``hidden = torch.zeros(...)`` before the loop, then
``out, hidden = model(x, hidden)`` in it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import libcst as cst

from synclint.analysis.targets import target_name_nodes
from synclint.traversal import walk


#: Statements whose body may not run, or run again, on a pass of the loop around them.
_COMPOUND = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.With, cst.Match)


class Binding(NamedTuple):
    name: str
    #: What the name is bound to (``None``: a part of it, or the items of a loop).
    value: cst.BaseExpression | None
    #: Bound by a statement of the loop's own body, which runs on every pass.
    unconditional: bool
    #: ``x += value``: on a tensor, an in-place operation, which keeps ``x`` where it lives.
    in_place: bool = False


class _BindingScan(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.bindings: list[Binding] = []
        self._nesting = 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        descend = super().on_visit(node)
        if isinstance(node, _COMPOUND):
            self._nesting += 1
        return descend

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, _COMPOUND):
            self._nesting -= 1
        super().on_leave(original_node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a nested function's names are its own

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            # ``x = value`` binds ``x`` to ``value``; an unpacking binds each name to a part.
            whole = node.value if isinstance(target.target, cst.Name) else None
            self._bound(target.target, whole)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bound(node.target, node.value, in_place=True)  # ``count += 1``, ``tokens += mask.sum()``

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bound(node.target, node.value)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bound(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self._bound(node.target, None)  # (counted as nested: it may run no pass)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bound(node.asname.name, None)

    def _bound(self, target: cst.BaseExpression, value: cst.BaseExpression | None, in_place: bool = False) -> None:
        unconditional = self._nesting == 0
        self.bindings.extend(Binding(name.value, value, unconditional, in_place) for name in target_name_nodes(target))


def loop_bindings(loop: cst.For | cst.While) -> Iterator[Binding]:
    """Each binding of ``loop``'s body (not of functions nested in it), in order, with the
    value bound (``None`` where it is a part of one: an unpacking, a loop target, ``with
    ... as``) and whether every pass makes it."""
    scan = _BindingScan()
    walk(loop.body, scan)
    yield from scan.bindings


def scope_bound_names(scope: cst.CSTNode) -> set[str]:
    """The names the code of ``scope`` (a function or a module) binds anywhere, not in
    functions nested in it: a name bound there is the scope's, before its binding too
    (``loss`` read at the top of a loop body, bound further down on the previous pass)."""
    scan = _BindingScan()
    walk(scope.body if isinstance(scope, cst.FunctionDef) else scope, scan)
    return {binding.name for binding in scan.bindings}
