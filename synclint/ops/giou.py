"""Public GIoU API: picks the compiled kernel or the PyTorch reference."""

from __future__ import annotations

import torch
from torch import Tensor

from synclint.ops import _build, _library
from synclint.ops.reference import giou_loss_reference

__all__ = ["giou", "giou_loss"]

_REDUCTIONS = ("mean", "sum", "none")


@torch.compiler.assume_constant_result
def _use_kernel(device_type: str) -> bool:
    # Evaluated eagerly even under torch.compile (the build happens at trace
    # time, outside the graph), and baked into the graph as a constant.
    return _build.ensure_kernel(device_type)


def _same_dtype(pred: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """Promote mismatched box dtypes on device (e.g. fp16 preds, fp32 targets)."""
    if pred.dtype == target.dtype:
        return pred, target
    common = torch.promote_types(pred.dtype, target.dtype)
    return pred.to(common), target.to(common)


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
            ``(B, N, 4)`` with ``N`` padded slots per image. float32, float16,
            bfloat16 or float64; math is done in float32 (float64 for float64).
        valid: optional boolean ``pred.shape[:-1]`` mask of the present boxes.
        counts: optional ``(B,)`` integer tensor, image ``b`` has boxes in its
            first ``counts[b]`` slots (needs ``(B, N, 4)`` boxes).
            Without ``valid`` and ``counts``, a target row of four zeros is
            padding (absent).
        reduction: ``"mean"`` (over present boxes; 0 if there are none),
            ``"sum"``, or ``"none"`` (per-slot loss, 0 at absent slots).
        eps: added to the union and enclosure areas in the denominators.

    Returns:
        The loss in ``pred``'s dtype. Differentiable w.r.t. both boxes; absent
        slots get zero gradients. Never synchronises with the host.
    """
    if reduction not in _REDUCTIONS:
        raise ValueError(f"giou_loss: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    pred, target = _same_dtype(pred, target)
    if valid is not None and valid.dtype != torch.bool:
        valid = valid.to(torch.bool)
    if counts is not None and counts.dtype != torch.int64:
        counts = counts.to(torch.int64)
    if _use_kernel(pred.device.type):
        loss, _num_valid = _library.giou_loss_forward(
            pred, target, valid, counts, reduction, float(eps)
        )
        return loss
    return giou_loss_reference(
        pred, target, valid=valid, counts=counts, reduction=reduction, eps=eps
    )


def giou(pred: Tensor, target: Tensor, *, eps: float = 1e-7) -> Tensor:
    """Elementwise generalized IoU of matching boxes, shape ``pred.shape[:-1]``.

    Every slot counts (no padding rule); differentiable w.r.t. both boxes.
    """
    every_slot = torch.ones(pred.shape[:-1], dtype=torch.bool, device=pred.device)
    return 1 - giou_loss(pred, target, valid=every_slot, reduction="none", eps=eps)
