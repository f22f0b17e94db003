"""SL103: reductions of a boolean-masked tensor -> reductions of a ``torch.where``.

==================  ==========================================================
``x[m].sum()``      ``torch.where(m, x, 0).sum()``
``x[m].mean()``     ``(torch.where(m, x, 0).sum(dtype=A) / m.sum()).to(x.dtype)``
``x[m].amax()``     ``torch.where(m, x, LOWEST).amax()``
``x[m].amin()``     ``torch.where(m, x, HIGHEST).amin()``
==================  ==========================================================

``A`` is ``torch.promote_types(x.dtype, torch.float32)``: a half-precision mean
accumulates in float32 (as PyTorch's own ``mean`` does), so 4096 fp16 values of
100 give 100, not inf. ``LOWEST`` is ``-inf`` for floating ``x`` and
``torch.iinfo(x.dtype).min`` otherwise (read from the dtype on the host: no
sync), so the dtype is kept. (``.max()`` / ``.min()`` without arguments are
``amax`` / ``amin``.)

Preconditions (proven, else no fix):

* ``m`` is computed elementwise from ``x`` (``x > 0``, ``x.isfinite()``), so the two
  have the same shape (``patterns.mask_of``);
* ``x`` and ``m`` are names, attributes or pure expressions: the fix reads them
  more than once (``proofs.pure_expression``);
* ``torch`` is reachable there.

Unsafe: the summation order differs (float results may differ in the last
bits); an empty mask gives ``LOWEST`` / ``HIGHEST`` from ``amax`` / ``amin``
where the original raised. ``sum`` and ``mean`` of an empty mask agree (0 and NaN).
"""

from __future__ import annotations

import libcst as cst

from synclint.fixers import fixer, tree
from synclint.fixers.base import Declined, FixProposal
from synclint.fixers.patterns import atom, mask_of, torch_name, wrapped
from synclint.fixers.proofs import pure_expression


def _reference(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)

_LOWEST = '(float("-inf") if {x}.is_floating_point() else {torch}.iinfo({x}.dtype).min)'
_HIGHEST = '(float("inf") if {x}.is_floating_point() else {torch}.iinfo({x}.dtype).max)'
_FILL = {"sum": "0", "mean": "0", "amax": _LOWEST, "max": _LOWEST, "amin": _HIGHEST, "min": _HIGHEST}
_REDUCE = {"sum": "sum", "mean": "sum", "amax": "amax", "max": "amax", "amin": "amin", "min": "amin"}


@fixer("SL103")
def propose_where_reduction(rule, node: cst.CSTNode) -> FixProposal | Declined | None:
    if not (isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index)):
        return None
    attribute = tree.parent(rule, node)
    call = tree.parent(rule, attribute)
    if not (isinstance(attribute, cst.Attribute) and attribute.value is node and isinstance(call, cst.Call)):
        return None
    reduction = attribute.attr.value
    if call.func is not attribute or call.args or reduction not in _FILL:
        return None
    tensor, mask = node.value, node.slice[0].slice.value
    if not mask_of(rule, mask, tensor, node):
        return Declined("the mask is not computed elementwise from the tensor (their shapes may differ)")
    if not (_reference(tensor) and pure_expression(rule, mask)):
        return Declined("the masked tensor or the mask is an expression the fix would evaluate twice")
    named = torch_name(rule, call)
    if isinstance(named, Declined):
        return named
    torch, imports = named
    x = tree.code(tensor)
    fill = _FILL[reduction].format(x=tree.code(atom(tensor)), torch=torch)
    where = f"{torch}.where({tree.code(mask)}, {x}, {fill})"
    if reduction == "mean":
        accumulate = f"{torch}.promote_types({tree.code(atom(tensor))}.dtype, {torch}.float32)"
        selected = f"({where}.sum(dtype={accumulate}) / {tree.code(atom(mask))}.sum()).to({tree.code(atom(tensor))}.dtype)"
    else:
        selected = f"{where}.{_REDUCE[reduction]}()"
    replacement = wrapped(rule, call, tree.expr(selected))
    return FixProposal("unsafe", f"Reduce with `torch.where` instead of `x[mask].{reduction}()`", {call: replacement}, imports)
