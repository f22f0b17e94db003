"""What a chain of tensor methods makes of a loader's batch on the host.

A loader that pins memory yields batches whose copies to the device can be
asynchronous. A *view* of such a batch (``images.unsqueeze(1)``, ``batch["img"][:, 0]``)
is the same pinned memory: its ``non_blocking=True`` copy is still asynchronous, and a
blocking copy of it is the loader's copy (SL401's). A *conversion* (``images.float()``,
``.contiguous()``, ``.to(torch.float16)``) returns the batch itself when there is nothing
to convert, and otherwise a new tensor in pageable memory, whose copy blocks the host
even with ``non_blocking=True``: the remedy is to move the batch first and convert it on
the device. Which of the two happens depends on the batch's dtype and layout, which the
source does not show; the rules say so.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from synclint.analysis.imports import dotted_name

#: The chain is a view of the batch: the same memory, pinned when the loader pins it.
VIEW = "view"
#: A view whose strides no longer follow its shape (``x.permute(0, 3, 1, 2)``): the same
#: memory too, but reshaping it (``.reshape``, ``.flatten``) copies.
REORDERED = "reordered view"

#: Methods that return a view of their tensor (a contiguous loader batch reshapes as a view).
_VIEWS = frozenset({
    "view", "view_as", "reshape", "reshape_as", "permute", "transpose", "t", "unsqueeze", "squeeze", "flatten",
    "unflatten", "narrow", "select", "expand", "expand_as", "movedim", "moveaxis", "swapaxes", "detach",
})
#: Views that reorder (or repeat) the elements in memory order.
_REORDERING = frozenset({"permute", "transpose", "t", "expand", "expand_as", "movedim", "moveaxis", "swapaxes"})
#: Views that copy instead when their tensor's strides do not allow a view.
_RESHAPING = frozenset({"reshape", "reshape_as", "flatten"})
#: Methods that convert their tensor on the host: the tensor itself when nothing changes,
#: else a new tensor in pageable memory.
_CONVERSIONS = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "short", "char", "byte", "bool", "contiguous",
})
_DTYPE_PREFIXES = ("torch.",)
_SUBSCRIPT = "[]"


def is_view(made: str | None) -> bool:
    """Whether what :func:`derivation` answered is the batch's own memory."""
    return made in (VIEW, REORDERED)


def derivation(value: cst.BaseExpression, origin: Callable[[cst.BaseExpression], str | None]) -> str | None:
    """What ``value``, a chain of the methods above (and of basic subscripts) applied to a
    base expression, is made of: :data:`VIEW` (or :data:`REORDERED`) when every step is a
    view of a base that is a batch or a view of one; else the first conversion's method
    name (``"float"``; ``"reshape"`` of a reordered view) when the base is a batch, a view
    or a conversion of one; None for any other expression (a reduction, a move, a call of a
    function: no longer the loader's data).

    ``origin(base)`` says what the base (a name, or a subscript of one) holds: VIEW for a
    loader's batch or a field of one, what this function answered for a name bound to a
    view or a conversion of one, else None."""
    steps: list[str] = []
    while True:
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            step = _step(value)
            if step is None:
                return None
            steps.append(step)
            value = value.func.value
        elif isinstance(value, cst.Subscript) and _basic_index(value):
            steps.append(_SUBSCRIPT)  # ``images.float()[:, 0]`` (``batch["img"]`` is a base: a field)
            value = value.value
        else:
            break
    if not steps:
        return None
    made = origin(value)
    if made is None:
        return None
    for step in reversed(steps):  # the innermost first
        if not is_view(made):
            break  # a conversion's tensor, whatever views of it follow
        if step in _CONVERSIONS or step == "to" or (step in _RESHAPING and made == REORDERED):
            made = step
        elif step in _REORDERING:
            made = REORDERED
    return made


def _step(call: cst.Call) -> str | None:
    """The method of one call of a chain, when it is a view or a conversion; else None."""
    method = call.func.attr.value  # type: ignore[attr-defined]
    if method in _VIEWS:
        return method
    if method in _CONVERSIONS and not call.args:
        return method
    if method == "to" and _to_a_dtype(call):
        return "to"
    return None


def _to_a_dtype(call: cst.Call) -> bool:
    """``.to(torch.float16)``, ``.to(dtype=torch.float16)``: a cast on the host, not a move."""
    if len(call.args) != 1 or call.args[0].star:
        return False
    argument = call.args[0]
    if argument.keyword is not None and argument.keyword.value != "dtype":
        return False
    name = dotted_name(argument.value) or ""
    return argument.keyword is not None or (name.startswith(_DTYPE_PREFIXES) and name.count(".") == 1)


def _basic_index(node: cst.Subscript) -> bool:
    """``x[:, 0]``, ``x[1:3]``, ``x[..., None]``: basic indexing, a view (not ``x[idx]``)."""
    for element in node.slice:
        inner = element.slice
        if isinstance(inner, cst.Slice):
            continue
        value = inner.value  # type: ignore[union-attr]
        if isinstance(value, cst.Integer) or (isinstance(value, cst.Name) and value.value in ("None", "Ellipsis")):
            continue
        if isinstance(value, cst.Ellipsis):
            continue
        if isinstance(value, cst.UnaryOperation) and isinstance(value.expression, cst.Integer):
            continue
        return False
    return True
