"""Public GIoU API: picks the compiled kernel or the PyTorch reference."""

from __future__ import annotations

import torch
from torch import Tensor

from synclint.ops import _build, _library, reference
from synclint.ops._checks import check_reduction, prepare

__all__ = ["giou", "giou_loss"]


def _use_kernel(device_type: str) -> bool:
    if torch.compiler.is_compiling():
        # Dynamo really imports a module named in traced code, and the
        # function there is marked as a trace-time constant: the build or
        # load happens outside the graph, which holds the op (or the
        # reference) as decided. Importing it only here keeps
        # `import synclint.ops` from importing torch._dynamo.
        from synclint.ops import _compile_time

        return _compile_time.use_kernel(device_type)
    return _build.ensure_kernel(device_type)


def giou_loss(
    pred: Tensor,
    target: Tensor,
    *,
    valid: Tensor | None = None,
    counts: Tensor | None = None,
    reduction: str = "mean",
    eps: float = 1e-7,
) -> Tensor:
    """Fused generalized-IoU loss, ``1 - GIoU``, of matching boxes.

    Args:
        pred, target: boxes ``(..., 4)`` as ``x1, y1, x2, y2``, usually
            ``(B, N, 4)`` with ``N`` padded slots per image, the same shape
            (never broadcast) on the same device. float32, float16, bfloat16
            or float64; mixed dtypes are promoted on the device; math is done
            in float32 (float64 for float64).
        valid: optional boolean ``pred.shape[:-1]`` mask of the present boxes.
        counts: optional ``(B,)`` integer tensor, image ``b`` has boxes in its
            first ``counts[b]`` slots (needs ``(B, N, 4)`` boxes). With
            ``valid`` or ``counts``, absent slots are not read.
            Without ``valid`` and ``counts``, a target row of four zeros is
            padding (absent).
        reduction: ``"mean"`` (over present boxes; 0 if there are none),
            ``"sum"``, or ``"none"`` (per-slot loss, 0 at absent slots).
        eps: added to the union and enclosure areas in the denominators.

    Returns:
        The loss in the boxes' dtype. Differentiable w.r.t. both boxes, to any
        order (``create_graph=True`` switches the backward to a differentiable
        composite); absent slots get zero gradients. Never synchronises with
        the host.

    Raises:
        ValueError: an unknown ``reduction``.
        RuntimeError: mismatched shapes or devices, non-floating boxes, a
            ``valid`` or ``counts`` of the wrong shape or dtype (the same
            errors whether the compiled kernel or the fallback would run).
    """
    check_reduction(reduction)
    # The same checks whichever path runs (kernel or fallback); see _checks.
    pred, target, valid, counts = prepare(pred, target, valid, counts)
    if _use_kernel(pred.device.type):
        if pred.device.type == "cpu" and not torch.compiler.is_compiling():
            # Eager CPU: no torch.library autograd wrapper, and loss and
            # gradient in one pass when a gradient is needed (see
            # _library.eager_loss). torch.compile traces the registered op.
            return _library.eager_loss(pred, target, valid, counts, reduction, float(eps))
        loss, _num_valid = torch.ops.synclint.giou_loss_forward(
            pred, target, valid, counts, reduction, float(eps)
        )
        return loss
    return reference._loss(pred, target, valid, counts, reduction, float(eps))


def giou(pred: Tensor, target: Tensor, *, eps: float = 1e-7) -> Tensor:
    """Elementwise generalized IoU of matching boxes, shape ``pred.shape[:-1]``.

    Every slot counts (no padding rule); differentiable w.r.t. both boxes.
    """
    every_slot = torch.ones(pred.shape[:-1], dtype=torch.bool, device=pred.device)
    return 1 - giou_loss(pred, target, valid=every_slot, reduction="none", eps=eps)
