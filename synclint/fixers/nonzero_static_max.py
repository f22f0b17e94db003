"""SL101: the largest nonzero coordinate -> ``torch.nonzero_static(..., size=c.numel())``.

``torch.nonzero(c).max()`` (also ``c.nonzero()``, ``torch.argwhere(c)``, and ``.amax()``)
is the largest coordinate of any non-zero element of ``c``, e.g. the last valid
position of a 1-D length mask. ``c`` has at most ``c.numel()`` non-zero elements, so
``torch.nonzero_static(c, size=c.numel())`` holds every row of the ``nonzero`` result,
in the same order, followed by rows of the default ``fill_value`` ``-1``. Every real
coordinate is ``>= 0 > -1``, so the padding never wins the max: the value (a 0-d int64
tensor) is equal whenever ``c`` has a non-zero element, and the host never waits for
the count::

    last = lengths_mask.nonzero().max()
    -> last = torch.nonzero_static(lengths_mask, size=lengths_mask.numel()).max()

Unsafe: when ``c`` has elements but none is non-zero, the original raises (``max()``
of an empty tensor) and the fixed code returns ``-1``. The fixed code allocates the
worst case, ``c.numel()`` rows. Preconditions (proven, else no fix):

* the ``nonzero`` result (not ``as_tuple``) is the receiver of an argument-less
  ``.max()`` / ``.amax()`` (``max(dim)`` also returns indices, ``min`` would see the
  padding);
* the bound is read from ``c`` itself: ``c`` is a known tensor named by a name or
  attribute (``c.numel()``), or a comparison of such a tensor with a number literal
  (``x > 0`` has ``x``'s shape: ``x.numel()``), so evaluating it again reads the same
  object and changes nothing;
* ``torch`` is reachable there (``proofs.torch_prefix``).
"""

from __future__ import annotations

import libcst as cst

from synclint.fixers import fixer, tree
from synclint.fixers.base import Declined, FixProposal
from synclint.fixers.patterns import nonzero_call, torch_name
from synclint.fixers.proofs import is_tensor

_REDUCTIONS = frozenset({"max", "amax"})


@fixer("SL101")
def propose_nonzero_static_max(rule, node: cst.CSTNode) -> FixProposal | Declined | None:
    found = nonzero_call(rule, node)
    if found is None or found.as_tuple or not _max_receiver(rule, node):
        return None
    bound_of = _bound_tensor(rule, found.condition)
    if bound_of is None:
        return Declined("no static bound on the count: the mask is not a named tensor (or one compared with a number)")
    named = torch_name(rule, node)
    if isinstance(named, Declined):
        return named
    torch, imports = named
    condition = tree.code(found.condition)
    replacement = tree.expr(f"{torch}.nonzero_static({condition}, size={tree.code(bound_of)}.numel())")
    return FixProposal(
        "unsafe", "Pad the indices to the mask's size with `nonzero_static`; the -1 padding never wins the max",
        {node: replacement.with_changes(lpar=node.lpar, rpar=node.rpar)}, imports,
    )


def _max_receiver(rule, node: cst.CSTNode) -> bool:
    """``node.max()`` / ``node.amax()`` with no arguments."""
    attribute = tree.parent(rule, node)
    if not (isinstance(attribute, cst.Attribute) and attribute.value is node and attribute.attr.value in _REDUCTIONS):
        return False
    call = tree.parent(rule, attribute)
    return isinstance(call, cst.Call) and call.func is attribute and not call.args


def _bound_tensor(rule, condition: cst.BaseExpression) -> cst.BaseExpression | None:
    """The tensor whose ``numel()`` bounds the count of ``condition``'s non-zero elements."""
    if _reference(condition):
        return condition if is_tensor(rule, condition) else None
    if isinstance(condition, cst.Comparison) and len(condition.comparisons) == 1 and not condition.lpar:
        left, right = condition.left, condition.comparisons[0].comparator
        if _reference(left) and is_tensor(rule, left) and _number(right):
            return left
    return None


def _reference(node: cst.BaseExpression) -> bool:
    """A name or a chain of attributes of one: evaluating it again reads the same object."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name) and not node.lpar


def _number(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))
