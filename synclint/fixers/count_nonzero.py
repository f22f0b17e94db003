"""SL101: a nonzero result used only for its length -> ``torch.count_nonzero``.

``len(torch.nonzero(c))``, ``torch.nonzero(c).shape[0]``, ``torch.where(c)[0].numel()``
(also through a name used nowhere else) count the true elements of ``c``;
``torch.count_nonzero(c)`` counts them on the device.

Unsafe: the count becomes a 0-d tensor. Arithmetic and comparisons still
work, but using it as a Python int (``range(n)``, a shape) would now sync or fail.
"""

from __future__ import annotations

import libcst as cst

from synclint.fixers import fixer, tree
from synclint.fixers.base import FixProposal
from synclint.fixers.patterns import count_target, nonzero_call, torch_name


@fixer("SL101")
def propose_count_nonzero(rule, node: cst.CSTNode) -> FixProposal | None:
    found = nonzero_call(rule, node)
    if found is None:
        return None
    counted: cst.BaseExpression = node  # type: ignore[assignment]
    if found.as_tuple:
        # Only one of the index tensors has the count as its length: `where(c)[0]`.
        counted = tree.parent(rule, node)  # type: ignore[assignment]
        if not (isinstance(counted, cst.Subscript) and counted.value is node and _integer_index(counted)):
            return None
    target = count_target(rule, counted)
    if target is None:
        return None
    count, binding = target
    if not found.as_tuple and _is_numel(rule, count):
        return None  # numel of an (n, ndim) index tensor is n * ndim
    if binding is not None:
        place = tree.place_of(rule, count)
        if not tree.stable_between(place.block, binding.index, place.index, tree.name_values(found.condition), rule.context.qualify):
            return None
    torch, imports = torch_name(rule)
    replacements: dict = {count: tree.expr(f"{torch}.count_nonzero({tree.code(found.condition)})")}
    if binding is not None:
        replacements[binding.statement] = cst.RemovalSentinel.REMOVE
    return FixProposal("unsafe", "Count with `torch.count_nonzero` on the device", replacements, imports)


def _integer_index(subscript: cst.Subscript) -> bool:
    index = subscript.slice[0].slice if len(subscript.slice) == 1 else None
    return isinstance(index, cst.Index) and isinstance(index.value, cst.Integer)


def _is_numel(rule, count: cst.BaseExpression) -> bool:
    if not isinstance(count, cst.Call):
        return False
    if isinstance(count.func, cst.Attribute) and count.func.attr.value == "numel":
        return True
    return rule.context.qualify(count.func) == "torch.numel"
