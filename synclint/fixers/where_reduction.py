"""SL103: reductions of a boolean-masked tensor -> reductions of a ``torch.where``.

==================  ===============================================
``x[m].sum()``      ``torch.where(m, x, 0).sum()``
``x[m].mean()``     ``torch.where(m, x, 0).sum() / m.sum()``
``x[m].amax()``     ``torch.where(m, x, float("-inf")).amax()``
``x[m].amin()``     ``torch.where(m, x, float("inf")).amin()``
==================  ===============================================

(``.max()`` / ``.min()`` without arguments are ``amax`` / ``amin``.) Offered
only when ``m`` is computed elementwise from ``x`` (``x > 0``,
``x.isfinite()``), so the two have the same shape.

Unsafe: the summation order differs (float results may differ in the last
bits); an empty mask gives ``-inf`` / ``inf`` from ``amax`` / ``amin`` where
the original raised; integer ``x`` with ``amax``/``amin`` is promoted to float.
``sum`` and ``mean`` of an empty mask agree (0 and NaN).
"""

from __future__ import annotations

import libcst as cst

from synclint.fixers import fixer, tree
from synclint.fixers.base import FixProposal
from synclint.fixers.patterns import atom, mask_of, torch_name, wrapped

_FILL = {"sum": "0", "mean": "0", "amax": 'float("-inf")', "max": 'float("-inf")', "amin": 'float("inf")', "min": 'float("inf")'}
_REDUCE = {"sum": "sum", "mean": "sum", "amax": "amax", "max": "amax", "amin": "amin", "min": "amin"}


@fixer("SL103")
def propose_where_reduction(rule, node: cst.CSTNode) -> FixProposal | None:
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
        return None
    torch, imports = torch_name(rule)
    selected = f"{torch}.where({tree.code(mask)}, {tree.code(tensor)}, {_FILL[reduction]}).{_REDUCE[reduction]}()"
    if reduction == "mean":
        selected = f"{selected} / {tree.code(atom(mask))}.sum()"
    replacement = wrapped(rule, call, tree.expr(selected))
    return FixProposal("unsafe", f"Reduce with `torch.where` instead of `x[mask].{reduction}()`", {call: replacement}, imports)
