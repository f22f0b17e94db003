"""Names whose tensor a block may give elements: what an empty tensor (``torch.Tensor([])``,
see :func:`synclint.analysis.devices.empty_construction`) holds no longer when it is moved.

Flow tracks a name bound empty in straight-line order; two things that order does not see
can fill it before a move: a binding later in the body of a loop around the move (the next
pass moves what it bound) and a change in place (``x.resize_(n)``, ``torch.cat(..., out=x)``),
which rebinds nothing.
"""

from __future__ import annotations

import libcst as cst

from synclint.analysis.targets import target_name_nodes
from synclint.traversal import walk

#: Tensor methods that change the number of elements of their receiver in place.
_RESIZING_METHODS = frozenset({"resize_", "resize_as_", "set_"})


class _GrownScan(cst.CSTVisitor):
    def __init__(self, rebinds: bool) -> None:
        super().__init__()
        self.rebinds = rebinds
        self.names: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a nested function's names are its own

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _RESIZING_METHODS and isinstance(func.value, cst.Name):
            self.names.add(func.value.value)  # ``x.resize_(n)``
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "out" and isinstance(arg.value, cst.Name):
                self.names.add(arg.value.value)  # ``torch.cat([x, y], out=x)``

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._bound(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bound(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bound(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bound(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bound(node.target)

    def _bound(self, target: cst.BaseExpression) -> None:
        if self.rebinds:
            self.names.update(node.value for node in target_name_nodes(target))


def rebound_or_grown_in(loop: cst.For | cst.While) -> set[str]:
    """The names ``loop``'s body binds or grows in place: on its second pass, a name bound
    empty before the loop may hold what the first pass put there."""
    scan = _GrownScan(rebinds=True)
    walk(loop.body, scan)
    return scan.names


def grown_in_place(scope: cst.CSTNode) -> set[str]:
    """The names the code of ``scope`` (a function or a module) grows in place
    (``x.resize_(n)``, ``out=x``): an empty tensor's binding says nothing of its size after that."""
    scan = _GrownScan(rebinds=False)
    walk(scope.body if isinstance(scope, cst.FunctionDef) else scope, scan)
    return scan.names
