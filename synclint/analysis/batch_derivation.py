"""What a chain of tensor methods makes of a loader's batch on the host.

A loader that pins memory yields batches whose copies to the device can be
asynchronous. A *view* of such a batch (``images.unsqueeze(1)``, ``batch["img"][:, 0]``)
is the same pinned memory: its ``non_blocking=True`` copy is still asynchronous, and a
blocking copy of it is the loader's copy (SL401's). A *conversion* (``images.float()``,
``.to(torch.float16)``; ``.contiguous()`` or ``.reshape()`` of a view that may not be contiguous,
``images.permute(0, 3, 1, 2).contiguous()``) returns the batch itself when there is nothing
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
#: A view that may no longer be contiguous (``x.permute(0, 3, 1, 2)``, ``x[:, 0]``): still the
#: batch's memory, but a ``reshape`` or ``flatten`` of it copies (see :func:`derivation`).
STRIDED = "strided view"
#: Either kind of view.
VIEWS = frozenset({VIEW, STRIDED})

#: Methods that return a view of their tensor and keep a contiguous tensor contiguous.
_CONTIGUOUS_VIEWS = frozenset({"view", "view_as", "unsqueeze", "squeeze", "unflatten", "detach"})
#: Methods that return a view of their tensor that is in general no longer contiguous.
_STRIDED_VIEWS = frozenset({"permute", "transpose", "t", "expand", "expand_as", "movedim", "moveaxis", "swapaxes"})
#: ``narrow``/``select`` of a dimension: contiguous along the first one only.
_DIM_VIEWS = frozenset({"narrow", "select"})
#: Methods that return a view of a contiguous tensor, and of a strided one a new tensor
#: (``x.permute(0, 3, 1, 2).reshape(n, -1)`` copies into pageable memory: a conversion).
_RESHAPES = frozenset({"reshape", "reshape_as", "flatten"})
#: Methods that convert their tensor on the host: the tensor itself when nothing changes,
#: else a new tensor in pageable memory. (``contiguous`` changes nothing of a contiguous
#: tensor, as a loader's stacked batch is: it converts only a strided view.)
_CONVERSIONS = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "short", "char", "byte", "bool", "contiguous",
})
#: Steps that are the tensor itself, or a view of it, while it is contiguous, and a copy of a strided view.
_COPIES_IF_STRIDED = _RESHAPES | {"contiguous"}
_DTYPE_PREFIXES = ("torch.",)


def derivation(value: cst.BaseExpression, origin: Callable[[cst.BaseExpression], str | None]) -> str | None:
    """What ``value``, a chain of the methods above (and of basic subscripts) applied to a
    base expression, is made of: :data:`VIEW` (or :data:`STRIDED`, once a step may have
    made it non-contiguous) when every step is a view of a base that is a batch or a view
    of one; else the first conversion's method name (``"float"``; ``"reshape"`` of a
    strided view, which copies) when the base is a batch, a view or a conversion of one;
    None for any other expression (a reduction, a move, a call of a function: no longer
    the loader's data).

    ``origin(base)`` says what the base (a name, or a subscript of one) holds: VIEW for a
    loader's batch or a field of one, STRIDED or a method name for a name bound to such a
    view or a conversion, else None."""
    steps: list[str] = []
    while True:
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            step = _step(value)
            if step is None:
                return None
            steps.append(step)
            value = value.func.value
        elif isinstance(value, cst.Subscript) and _basic_index(value):
            # ``images.float()[:, 0]`` (``batch["img"]`` is a base: a field)
            steps.append(VIEW if _keeps_contiguity(value) else STRIDED)
            value = value.value
        else:
            break
    if not steps:
        return None
    made = origin(value)
    if made is None:
        return None
    for step in reversed(steps):  # the innermost first
        if made not in VIEWS:
            break  # the first conversion names what the chain made
        if step in _COPIES_IF_STRIDED:
            made = step if made == STRIDED else VIEW  # a strided tensor reshaped (made contiguous) is copied
        elif step == STRIDED:
            made = STRIDED
        elif step != VIEW:
            made = step
    return made


def _step(call: cst.Call) -> str | None:
    """VIEW or STRIDED for a view, the method's name for a reshape (see :data:`_RESHAPES`)
    or a conversion, or None, for one method call of a chain."""
    method = call.func.attr.value  # type: ignore[attr-defined]
    if method in _CONTIGUOUS_VIEWS:
        return VIEW
    if method in _STRIDED_VIEWS:
        return STRIDED
    if method in _DIM_VIEWS:
        dims = [a.value for a in call.args if a.keyword is not None and a.keyword.value == "dim"]
        dim = dims[0] if dims else call.args[0].value if call.args and call.args[0].keyword is None else None
        return VIEW if isinstance(dim, cst.Integer) and dim.value == "0" else STRIDED
    if method in _RESHAPES:
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


def _keeps_contiguity(node: cst.Subscript) -> bool:
    """Basic indexing that keeps a contiguous tensor contiguous: leading integers, then at
    most one range without a step, then whole dimensions (``x[0]``, ``x[1:]``, ``x[0, :2]``,
    ``x[..., None]``); not ``x[:, 0]`` nor ``x[::2]``."""
    sliced = whole = False  # a range seen (later dimensions must be whole); a whole dimension seen
    for element in node.slice:
        inner = element.slice
        if isinstance(inner, cst.Slice):
            if inner.lower is None and inner.upper is None and inner.step is None:
                whole = True
            elif sliced or whole or inner.step is not None:
                return False
            else:
                sliced = True
            continue
        value = inner.value  # type: ignore[union-attr]
        if isinstance(value, cst.Name) and value.value == "None":
            continue
        if isinstance(value, cst.Ellipsis) or (isinstance(value, cst.Name) and value.value == "Ellipsis"):
            whole = True
            continue
        if sliced or whole:  # an integer after a range or a whole dimension
            return False
    return True
