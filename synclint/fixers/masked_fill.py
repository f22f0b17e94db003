"""SL101: index assignment through nonzero indices -> ``masked_fill_`` / ``torch.where``.

``x[torch.nonzero(c, as_tuple=True)] = v`` (or through a name,
``inds = torch.where(c); x[inds] = v``) writes ``v`` where ``c`` holds. The
same write without the data-dependent index tensor:

* ``x.masked_fill_(c, v)`` for a scalar ``v`` (a Python number or 0-d value);
* ``x.copy_(torch.where(c, y, x))`` for ``v = y[inds]`` (in place, like the original).

Preconditions (each proven, else no fix and the message says why):

* ``c`` is computed elementwise from ``x`` (same shape). A mask over leading
  dimensions only (``x`` is ``(N, D)``, ``c = x.any(-1)`` is ``(N,)``) indexes rows,
  while ``masked_fill_`` broadcasts from the right: it raises, or writes the wrong
  elements when ``x`` is square. Reductions (``any``/``all``) are not elementwise.
* Nothing between the ``nonzero`` and the write rebinds a name of ``c`` or mutates
  any object (``proofs.unchanged_between``): the condition is now evaluated at the
  write, and an alias of ``x`` mutated in between would change it.
* ``x`` is a name or attribute chain (the ``copy_`` form reads it twice).
* ``torch`` is reachable at the write (``proofs.torch_prefix``).

Safe when ``v`` is a Python number (literal or known Python value). A ``v`` of
unknown kind is offered as unsafe: if it is a tensor of the selected length the
fixed line raises (``masked_fill_`` takes only a 0-d value); if it is a 0-d tensor
of another dtype the original raised ("Index put requires the source and
destination dtypes match") and the fix casts. The ``copy_`` form is unsafe for
the same reason: ``x[i] = y[i]`` raises when ``y``'s dtype differs, ``copy_`` casts.
"""

from __future__ import annotations

import libcst as cst

from synclint.fixers import fixer, tree
from synclint.fixers.base import Declined, FixProposal
from synclint.analysis.kinds import Kind
from synclint.fixers.patterns import elementwise_of, is_boolean, nonzero_call, torch_name
from synclint.fixers.proofs import unchanged_between


@fixer("SL101")
def propose_masked_fill(rule, node: cst.CSTNode) -> FixProposal | None:
    found = nonzero_call(rule, node)
    if found is None or not found.as_tuple or not is_boolean(rule, found.condition):
        return None
    direct = _assignment_indexed_by(rule, node)
    if direct is not None:
        return _rewrite(rule, found.condition, direct, index=node, binding=None)
    place = tree.place_of(rule, node)
    assignment = tree.simple_assignment(place.statement) if place else None
    if place is None or assignment is None or assignment[1] is not node:
        return None
    name = assignment[0]
    function = tree.enclosing_function(rule, node)
    scope = function.body if function is not None else rule.context.module
    binding_target = place.statement.body[0].targets[0].target  # type: ignore[attr-defined]
    uses = [n for n in tree.occurrences(name, [scope]) if n is not binding_target]
    write = _assignment_indexed_by(rule, uses[0]) if uses else None
    if write is None or not all(_in_this_write(rule, use, write) for use in uses[1:]):
        return None  # other uses still need the indices
    use_place = tree.place_of(rule, uses[0])
    if write is None or use_place is None or use_place.block is not place.block:
        return None
    if use_place.index <= place.index:
        return None
    # The condition is evaluated later now: nothing in between may change it or an alias.
    if not unchanged_between(rule, place.block, place.index, use_place.index, tree.name_values(found.condition)):
        return Declined("the condition's tensors may change between the nonzero and the write")
    return _rewrite(rule, found.condition, write, index=uses[0], binding=place.statement)


def _assignment_indexed_by(rule, index: cst.CSTNode) -> cst.Assign | None:
    """The ``x[index] = v`` statement whose whole subscript is ``index``."""
    element = tree.parent(rule, tree.parent(rule, index))  # Index -> SubscriptElement
    subscript = tree.parent(rule, element)
    if not (isinstance(subscript, cst.Subscript) and len(subscript.slice) == 1 and subscript.slice[0] is element):
        return None
    target = tree.parent(rule, subscript)
    assign = tree.parent(rule, target)
    if not (isinstance(target, cst.AssignTarget) and isinstance(assign, cst.Assign) and len(assign.targets) == 1):
        return None
    return assign


def _rewrite(rule, condition, assign: cst.Assign, index, binding) -> FixProposal | Declined | None:
    tensor = assign.targets[0].target.value  # type: ignore[attr-defined]
    value = assign.value
    if not elementwise_of(rule, condition, tensor):
        return Declined("the condition is not computed elementwise from the written tensor (its shape may differ)")
    if not _plain_reference(tensor):
        return None
    named = torch_name(rule, assign)
    if isinstance(named, Declined):
        return named
    torch, imports = named
    safety = "safe"
    if _indexed_by_same(value, index):
        source = value.value  # y in y[inds]
        new = f"{tree.code(tensor)}.copy_({torch}.where({tree.code(condition)}, {tree.code(source)}, {tree.code(tensor)}))"
        message = "Write with `copy_(torch.where(...))` instead of nonzero indices"
        # Index assignment raises when `y`'s dtype differs from `x`'s; `copy_` casts.
        safety = "unsafe"
    elif rule.context.kind_of(value).is_tensor:
        return None  # a tensor of the selected length has no mask form
    else:
        new = f"{tree.code(tensor)}.masked_fill_({tree.code(condition)}, {tree.code(value)})"
        message = "Write with `masked_fill_` instead of nonzero indices"
        imports = ()
        if not _python_scalar(rule, value):
            safety = "unsafe"
            message += " (unsafe: the value is not known to be a number; a tensor of the selected length would now raise)"
    replacements: dict = {assign: cst.Expr(tree.expr(new))}
    if binding is not None:
        replacements[binding] = cst.RemovalSentinel.REMOVE
    return FixProposal(safety, message, replacements, imports)


def _python_scalar(rule, value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        value = value.expression
    if isinstance(value, (cst.Integer, cst.Float)):
        return True
    if isinstance(value, cst.Name) and value.value in ("True", "False"):
        return True
    return rule.context.kind_of(value) is Kind.PYTHON


def _plain_reference(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def _in_this_write(rule, use: cst.Name, write: cst.Assign) -> bool:
    """``use`` is the index of the written value: the ``i`` of ``y[i]`` in ``x[i] = y[i]``."""
    value = write.value
    return isinstance(value, cst.Subscript) and len(value.slice) == 1 and getattr(value.slice[0].slice, "value", None) is use


def _indexed_by_same(value: cst.BaseExpression, index: cst.CSTNode) -> bool:
    return (
        isinstance(value, cst.Subscript)
        and len(value.slice) == 1
        and isinstance(value.slice[0].slice, cst.Index)
        and tree.same(value.slice[0].slice.value, index)
    )
