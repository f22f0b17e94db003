"""SL103: ``x[m] = y[m]`` -> ``torch.where(m, y, x)``.

``x`` is updated in place, as before (``x.copy_(torch.where(m, y, x))``),
unless it is a fresh local: bound in the same block to a new tensor
(``x = a.clone()``, ``x = torch.zeros(...)``, ``x = a * b``) and only used in
arithmetic or comparisons in between (nothing can hold a view of it), where ``x = torch.where(m, y, x)`` is plain rebinding.

Preconditions (proven, else no fix):

* ``m`` is computed elementwise from the written ``x`` (``patterns.mask_of``): then
  ``y[m]`` works only if ``y`` has ``m``'s shape, and ``where`` selects the same
  elements. A mask known only to match ``y`` is declined: ``x`` may have more
  trailing dimensions (``x[m] = y[m]`` broadcasts; ``where`` would not);
* ``x`` is a name or attribute chain (read twice);
* ``torch`` is reachable there.

The rebinding form casts ``y`` to ``x``'s dtype (``y.to(x.dtype)``), as index
assignment did. Unsafe: ``y`` is read everywhere, not only under the mask, so
autograd also visits its unselected elements (a NaN or inf *derivative* there,
e.g. ``y = x.sqrt()`` at negative ``x``, turns the zero gradient into NaN).
"""

from __future__ import annotations

import libcst as cst

from synclint.fixers import fixer, tree
from synclint.fixers.base import Declined, FixProposal
from synclint.fixers.patterns import atom, mask_of, torch_name


def _reference(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)

_VIEWS = frozenset(
    {"view", "view_as", "reshape", "permute", "transpose", "t", "squeeze", "unsqueeze", "expand",
     "expand_as", "narrow", "select", "flatten", "unflatten", "movedim", "detach", "as_strided",
     "diagonal", "unbind", "split", "chunk", "contiguous", "to", "cuda", "cpu", "type", "float",
     "long", "int", "half", "double", "bool", "data"}
)


@fixer("SL103")
def propose_where_update(rule, node: cst.CSTNode) -> FixProposal | Declined | None:
    if not (isinstance(node, cst.Assign) and len(node.targets) == 1):
        return None
    write, read = node.targets[0].target, node.value
    if not (_masked(write) and _masked(read)):
        return None
    mask = write.slice[0].slice.value  # type: ignore[union-attr]
    if not tree.same(mask, read.slice[0].slice.value):  # type: ignore[union-attr]
        return None
    tensor, source = write.value, read.value  # type: ignore[union-attr]
    if not mask_of(rule, mask, tensor, node):
        return Declined("the mask is not computed elementwise from the written tensor (its shape may differ)")
    if not _reference(tensor):
        return None
    named = torch_name(rule, node)
    if isinstance(named, Declined):
        return named
    torch, imports = named
    selected = f"{torch}.where({tree.code(mask)}, {tree.code(source)}, {tree.code(tensor)})"
    if _fresh_local(rule, tensor, node):
        cast = f"{tree.code(atom(source))}.to({tree.code(tensor)}.dtype)"
        rebound = f"{torch}.where({tree.code(mask)}, {cast}, {tree.code(tensor)})"
        replacement: cst.BaseSmallStatement = node.with_changes(
            targets=[cst.AssignTarget(tensor)], value=tree.expr(rebound)
        )
    else:
        replacement = cst.Expr(tree.expr(f"{tree.code(tensor)}.copy_({selected})"))
    return FixProposal("unsafe", "Update with `torch.where` instead of boolean-mask assignment", {node: replacement}, imports)


def _masked(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.Subscript)
        and len(node.slice) == 1
        and isinstance(node.slice[0].slice, cst.Index)
    )


def _fresh_local(rule, tensor: cst.BaseExpression, statement: cst.CSTNode) -> bool:
    """Bound in this block to a new tensor (not a view, parameter or attribute), and
    nothing in between could have kept a reference to it."""
    place = tree.place_of(rule, statement)
    if not isinstance(tensor, cst.Name) or place is None:
        return False
    binding = tree.reaching_binding(place.block, place.index, tensor.value)
    if binding is None or not _creates_tensor(rule, binding.value):
        return False
    between = place.block[binding.index + 1 : place.index]
    return all(_plain_read(rule, n) for n in tree.occurrences(tensor.value, list(between)))


def _plain_read(rule, name: cst.Name) -> bool:
    """An operand of arithmetic or a comparison: a new tensor, never a view or alias."""
    return isinstance(tree.parent(rule, name), (cst.Comparison, cst.ComparisonTarget, cst.BinaryOperation, cst.UnaryOperation))


def _creates_tensor(rule, value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.BinaryOperation):
        return True
    if not isinstance(value, cst.Call):
        return False
    qualified = rule.context.qualify(value.func)
    if qualified is not None:
        return qualified.startswith("torch.") and qualified.rsplit(".", 1)[1] not in _VIEWS
    return isinstance(value.func, cst.Attribute) and value.func.attr.value == "clone"
