"""Which names an expression reads as variables: ``obj.x`` reads ``obj`` (not ``x``),
``f(key=v)`` reads ``f`` and ``v`` (not ``key``), and a lambda reads nothing until called."""

from __future__ import annotations

import libcst as cst

from synclint.traversal import walk

#: What a tensor says of itself but its values (``x.size(0)``, ``len(y)``, ``x.shape``): a
#: tensor built from them (``torch.zeros(x.size(0), 16)``) holds none of ``x``'s data.
_METADATA_METHODS = frozenset({"size", "dim", "numel", "nelement", "element_size", "get_device"})
_METADATA_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "layout"})


def names_read(node: cst.CSTNode, values_only: bool = False) -> set[str]:
    """The names ``node`` reads as variables; with ``values_only``, not those it reads only
    for their metadata (``x.size(0)``, ``len(y)``, ``x.shape``: see :data:`_METADATA_METHODS`)."""
    scan = _ValueReads() if values_only else _Reads()
    walk(node, scan)  # (read-only: asked of every assignment in a loop over batches)
    return scan.names


class _Reads(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        walk(node.value, self)  # ``self.x`` reads ``self``, not ``x``
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        walk(node.value, self)  # (not a keyword's name)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


class _ValueReads(_Reads):
    def visit_Call(self, node: cst.Call) -> bool:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _METADATA_METHODS:
            return False  # (``x.size(0)``: not its arguments either, plain numbers)
        return not (isinstance(func, cst.Name) and func.value == "len")

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if node.attr.value not in _METADATA_ATTRIBUTES:
            walk(node.value, self)
        return False
