"""SL105: ``torch.bincount(x, minlength=K)`` with values known to be below ``K`` ->
``scatter_add_`` into ``torch.zeros(K)``.

``bincount`` sizes its output ``max(x.max() + 1, K)``, so it reads ``x.max()`` back
every call. When every value is in ``[0, K)`` the size is ``K``, known on the host::

    torch.zeros(K, dtype=torch.int64, device=x.device).scatter_add_(0, x.long(), torch.ones_like(x, dtype=torch.int64))

Preconditions (proven, else no fix and the finding says why):

* no ``weights`` (the weighted output dtype follows the weights) and ``minlength``
  given by keyword (the second positional parameter is ``weights``);
* ``x`` is a name every binding of which bounds its values to ``[0, K)`` with the
  same ``K``: ``e % K`` (a tensor remainder takes the divisor's sign), or
  ``e.clamp(0, K - 1)`` / ``e.clamp(min=0, max=K - 1)`` / ``torch.clamp(e, 0, K - 1)``;
* ``K`` is an int literal or a name or attribute that is not a tensor;
* ``torch`` is reachable there.

Unsafe: a value outside ``[0, K)`` (which the proof rules out) would raise in
``scatter_add_`` (on CUDA, a device-side assert) where ``bincount`` grew the output.
"""

from __future__ import annotations

import libcst as cst

from synclint.analysis.inference import keyword, positional
from synclint.fixers import fixer, tree
from synclint.fixers.base import Declined, FixProposal
from synclint.fixers.patterns import torch_name
from synclint.fixers.proofs import all_bindings, is_tensor


@fixer("SL105")
def propose_scatter_count(rule, node: cst.CSTNode) -> FixProposal | Declined | None:
    if not isinstance(node, cst.Call) or any(a.star for a in node.args):
        return None
    qualified = rule.context.qualify(node.func)
    args = positional(node)
    if qualified in ("torch.bincount", "torch.Tensor.bincount") and len(args) == 1:
        values = args[0].value
    elif qualified is None and isinstance(node.func, cst.Attribute) and node.func.attr.value == "bincount" and not args:
        values = node.func.value
    else:
        return None
    minlength = keyword(node, "minlength")
    if minlength is None or keyword(node, "weights") is not None or len(node.args) != len(args) + 1:
        return None
    bound = minlength.value
    if not (isinstance(bound, cst.Integer) or (isinstance(bound, (cst.Name, cst.Attribute)) and not is_tensor(rule, bound))):
        return Declined("`minlength` is not known to be a Python int")
    if not (isinstance(values, cst.Name) and _bounded(rule, values, bound, node)):
        return Declined("the values are not known to be below `minlength` (`x % K` or `x.clamp(0, K - 1)` proves it)")
    named = torch_name(rule, node)
    if isinstance(named, Declined):
        return named
    torch, imports = named
    x, k = values.value, tree.code(bound)
    new = (
        f"{torch}.zeros({k}, dtype={torch}.int64, device={x}.device)"
        f".scatter_add_(0, {x}.long(), {torch}.ones_like({x}, dtype={torch}.int64))"
    )
    return FixProposal("unsafe", "Count into a fixed-size tensor with `scatter_add_`", {node: tree.expr(new)}, imports)


def _bounded(rule, name: cst.Name, bound: cst.BaseExpression, at: cst.CSTNode) -> bool:
    values = all_bindings(rule, name.value, at)
    return bool(values) and all(_bounds(rule, v, bound) for v in values)


def _bounds(rule, value: cst.BaseExpression, bound: cst.BaseExpression) -> bool:
    k = tree.code(bound)
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Modulo):
        return tree.code(value.right) == k and is_tensor(rule, value.left)
    if not isinstance(value, cst.Call):
        return False
    qualified = rule.context.qualify(value.func)
    if qualified == "torch.clamp":
        rest = value.args[1:]
    elif qualified is None and isinstance(value.func, cst.Attribute) and value.func.attr.value == "clamp":
        rest = value.args
    else:
        return False
    ordered = [a.value for a in rest if a.keyword is None]
    named = {a.keyword.value: a.value for a in rest if a.keyword is not None}
    low = ordered[0] if ordered else named.get("min")
    high_value = ordered[1] if len(ordered) > 1 else named.get("max")
    return (
        isinstance(low, cst.Integer) and low.evaluated_value == 0
        and high_value is not None and tree.code(high_value).replace(" ", "") == f"{k}-1".replace(" ", "")
    )
