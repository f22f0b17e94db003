"""SL101: a nonzero whose use has a static bound -> ``torch.nonzero_static``.

``torch.nonzero(c)`` (also ``c.nonzero()``, ``torch.argwhere(c)``) has one row per
non-zero element of ``c``, in row-major order. ``torch.nonzero_static(c, size=n,
fill_value=v)`` holds the first ``n`` of those rows, then rows of ``v``. Where the use
of the result cannot tell the two apart, the host never waits for the count:

* **an extreme coordinate**, an argument-less ``.max()`` / ``.amax()``, or ``.amax(0)``
  (per column): ``c`` has at most ``c.numel()`` non-zero elements, so
  ``size=c.numel()`` holds every row, and the default fill ``-1`` never wins against
  coordinates ``>= 0``. ``.min()`` / ``.amin()`` / ``.amin(0)`` pad with
  ``fill_value=c.numel()``, larger than any coordinate (each is below its dimension's
  size, at most ``numel``)::

      last = lengths_mask.nonzero().max()
      -> last = torch.nonzero_static(lengths_mask, size=lengths_mask.numel()).max()

* **the first row**, ``torch.nonzero(c)[0]`` (also ``[0, j]``): ``size=1`` keeps
  exactly that row, for any ``c``.

Unsafe: when ``c`` has no non-zero element, the original raises (a reduction over an
empty tensor, or index 0 out of bounds) and the fixed code returns the fill value
(``-1``, or ``c.numel()`` for a minimum). The reduction forms allocate ``c.numel()``
rows, the original's worst case. Preconditions (proven, else no fix):

* the result (not ``as_tuple``) is the receiver of one of the uses above, nothing
  else (``max(dim)`` also returns indices, other reductions would see the padding);
* for the reduction forms the bound is read from ``c`` itself: ``c`` is a known
  tensor named by a name or attribute (``c.numel()``), or a comparison of such a
  tensor with a number literal (``x > 0`` has ``x``'s shape: ``x.numel()``), so
  evaluating it again reads the same object and changes nothing;
* ``torch`` is reachable there (``proofs.torch_prefix``).
"""

from __future__ import annotations

import libcst as cst

from synclint.fixers import fixer, tree
from synclint.fixers.base import Declined, FixProposal
from synclint.fixers.patterns import nonzero_call, torch_name
from synclint.fixers.proofs import is_tensor

#: reduction method -> whether the padding must be larger than every coordinate
_REDUCTIONS = {"max": False, "amax": False, "min": True, "amin": True}
#: reductions that also take ``0`` / ``dim=0`` (``max(0)`` / ``min(0)`` return indices too)
_COLUMN_REDUCTIONS = frozenset({"amax", "amin"})


@fixer("SL101")
def propose_nonzero_static(rule, node: cst.CSTNode) -> FixProposal | Declined | None:
    found = nonzero_call(rule, node)
    if found is None or found.as_tuple:
        return None
    if _first_row(rule, node):
        return _proposal(rule, node, f"{tree.code(found.condition)}, size=1",
                         "Keep only the first row with `nonzero_static(size=1)`; the host never waits for the count")
    reduction = _reduction(rule, node)
    if reduction is None:
        return None
    bound_of = _bound_tensor(rule, found.condition)
    if bound_of is None:
        return Declined("no static bound on the count: the mask is not a named tensor (or one compared with a number)")
    numel = f"{tree.code(bound_of)}.numel()"
    if _REDUCTIONS[reduction]:
        arguments = f"{tree.code(found.condition)}, size={numel}, fill_value={numel}"
        why = f"the {numel} padding never wins the min"
    else:
        arguments = f"{tree.code(found.condition)}, size={numel}"
        why = "the -1 padding never wins the max"
    return _proposal(rule, node, arguments, f"Pad the indices to the mask's size with `nonzero_static`; {why}")


def _proposal(rule, node: cst.CSTNode, arguments: str, message: str) -> FixProposal | Declined:
    named = torch_name(rule, node)
    if isinstance(named, Declined):
        return named
    torch, imports = named
    replacement = tree.expr(f"{torch}.nonzero_static({arguments})")
    return FixProposal("unsafe", message, {node: replacement.with_changes(lpar=node.lpar, rpar=node.rpar)}, imports)


def _reduction(rule, node: cst.CSTNode) -> str | None:
    """``node.max()`` / ``.amax()`` / ``.min()`` / ``.amin()`` with no arguments, or
    ``node.amax(0)`` / ``.amin(dim=0)``: the reduction's name."""
    attribute = tree.parent(rule, node)
    if not (isinstance(attribute, cst.Attribute) and attribute.value is node and attribute.attr.value in _REDUCTIONS):
        return None
    call = tree.parent(rule, attribute)
    if not (isinstance(call, cst.Call) and call.func is attribute):
        return None
    name = attribute.attr.value
    if not call.args:
        return name
    if name in _COLUMN_REDUCTIONS and len(call.args) == 1:
        argument = call.args[0]
        keyword = argument.keyword.value if argument.keyword is not None else None
        value = argument.value
        if not argument.star and keyword in (None, "dim") and isinstance(value, cst.Integer) and value.evaluated_value == 0:
            return name
    return None


def _first_row(rule, node: cst.CSTNode) -> bool:
    """``node[0]`` or ``node[0, ...]``: the subscript's first index is the literal ``0``."""
    subscript = tree.parent(rule, node)
    if not (isinstance(subscript, cst.Subscript) and subscript.value is node and subscript.slice):
        return False
    first = subscript.slice[0].slice
    return (
        isinstance(first, cst.Index) and first.star is None
        and isinstance(first.value, cst.Integer) and first.value.evaluated_value == 0
    )


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
