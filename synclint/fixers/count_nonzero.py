"""SL101: a nonzero result used only for its length -> ``torch.count_nonzero``.

``len(torch.nonzero(c))``, ``torch.nonzero(c).shape[0]``, ``torch.where(c)[0].numel()``
(also through a name used nowhere else) count the true elements of ``c``;
``torch.count_nonzero(c)`` counts them on the device.

Unsafe: the count becomes a 0-d tensor. Preconditions (proven, else no fix):

* the count is used only where a 0-d tensor acts as the int did
  (``proofs.tensor_count_use``): arithmetic or comparisons whose result is tested
  by ``if`` / ``while`` / ``not`` or combined with a tensor, also through one name.
  A count that is returned, stored, formatted, used as a dict key, a shape or a
  ``range`` bound is left alone (it would become a tensor there);
* nothing between the ``nonzero`` line and the count rebinds a name of the
  condition or mutates any object (``proofs.unchanged_between``);
* ``torch`` is reachable where the count is.
"""

from __future__ import annotations

import libcst as cst

from synclint.fixers import fixer, tree
from synclint.fixers.base import Declined, FixProposal
from synclint.fixers.patterns import count_target, nonzero_call, torch_name
from synclint.fixers.proofs import tensor_count_use, unchanged_between


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
    if not tensor_count_use(rule, count):
        return Declined("the count is used where a tensor would not act as the int it replaces")
    if binding is not None:
        place = tree.place_of(rule, count)
        if not unchanged_between(rule, place.block, binding.index, place.index, tree.name_values(found.condition)):
            return Declined("the condition's tensors may change before the count is read")
    named = torch_name(rule, count)
    if isinstance(named, Declined):
        return named
    torch, imports = named
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
