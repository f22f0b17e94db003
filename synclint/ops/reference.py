"""Pure-PyTorch GIoU loss: the fallback when no compiled kernel is available,
and the oracle the kernels are tested against.

It implements exactly the kernels' semantics (``cuda_ext/giou.h``), including
their subgradient conventions, so eager autograd through it reproduces the
kernels' closed-form backward:

* widths are clamped with ``where(w > 0, w, 0)``: no gradient through a clamp
  that is active or exactly at zero (touching boxes);
* a min/max tie between a predicted and a target coordinate sends the whole
  gradient to the prediction (``torch.maximum`` would split it 50/50).

Everything is computed in float32 (float64 for float64 inputs) and cast back
to the input dtype; no operation here reads tensor data on the host.
"""

from __future__ import annotations

import torch
from torch import Tensor

from synclint.ops._checks import check_reduction, prepare

__all__ = ["giou_loss_reference", "giou_reference", "validity_mask"]


def validity_mask(
    target: Tensor, *, valid: Tensor | None = None, counts: Tensor | None = None
) -> Tensor:
    """Boolean ``target.shape[:-1]`` mask of the slots that hold a box.

    Default: a target row of four zeros is padding. ``valid`` is used as is;
    ``counts[b]`` marks the first ``counts[b]`` slots of image ``b`` present.
    The arguments are assumed checked (:func:`synclint.ops._checks.prepare`).
    """
    if valid is not None:
        return valid
    if counts is not None:
        slots = torch.arange(target.shape[-2], device=target.device)
        return slots < counts.unsqueeze(-1)  # any int64 count, however large
    return (target != 0).any(dim=-1)


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _pick(take_first: Tensor, first: Tensor, second: Tensor) -> Tensor:
    # torch.where, unlike torch.maximum/minimum, gives a tie's whole gradient
    # to one side: the same convention as the kernels.
    return torch.where(take_first, first, second)


def _clamp0(width: Tensor) -> Tensor:
    return torch.where(width > 0, width, 0.0)


def _box_loss(pred: Tensor, target: Tensor, eps: float) -> Tensor:
    """``1 - GIoU`` per box; the formula of ``cuda_ext/giou.h``."""
    px1, py1, px2, py2 = pred.unbind(-1)
    tx1, ty1, tx2, ty2 = target.unbind(-1)
    area_p = (px2 - px1) * (py2 - py1)
    area_t = (tx2 - tx1) * (ty2 - ty1)
    iw = _clamp0(_pick(px2 <= tx2, px2, tx2) - _pick(px1 >= tx1, px1, tx1))
    ih = _clamp0(_pick(py2 <= ty2, py2, ty2) - _pick(py1 >= ty1, py1, ty1))
    inter = iw * ih
    union = area_p + area_t - inter
    cw = _clamp0(_pick(px2 >= tx2, px2, tx2) - _pick(px1 <= tx1, px1, tx1))
    ch = _clamp0(_pick(py2 >= ty2, py2, ty2) - _pick(py1 <= ty1, py1, ty1))
    encl = cw * ch
    return 1 - inter / (union + eps) + (encl - union) / (encl + eps)


def giou_loss_reference(
    pred: Tensor,
    target: Tensor,
    *,
    valid: Tensor | None = None,
    counts: Tensor | None = None,
    reduction: str = "mean",
    eps: float = 1e-7,
) -> Tensor:
    """Reference ``giou_loss``; see :func:`synclint.ops.giou_loss` for the contract."""
    check_reduction(reduction)
    pred, target, valid, counts = prepare(pred, target, valid, counts)
    return _loss(pred, target, valid, counts, reduction, eps)


def _loss(
    pred: Tensor, target: Tensor, valid: Tensor | None, counts: Tensor | None, reduction: str, eps: float
) -> Tensor:
    """The reference on checked arguments (the fallback path of ``giou_loss``)."""
    out_dtype = pred.dtype
    compute = _compute_dtype(pred.dtype)
    pred_c, target_c = pred.to(compute), target.to(compute)
    present = validity_mask(target_c, valid=valid, counts=counts)

    # Swap absent slots for a harmless unit box *before* the math, so their
    # (discarded) values can never be inf/NaN and poison the gradients.
    # Built on the device: `new_tensor([0, 0, 1, 1])` would upload Python data with a
    # blocking copy every call (a sync, and no CUDA graph capture; seen on an H100).
    unit_box = (torch.arange(4, device=pred_c.device) >= 2).to(compute)
    keep = present.unsqueeze(-1)
    per_box = _box_loss(
        torch.where(keep, pred_c, unit_box), torch.where(keep, target_c, unit_box), eps
    )
    per_box = torch.where(present, per_box, 0.0)

    if reduction == "none":
        return per_box.to(out_dtype)
    total = per_box.sum()
    if reduction == "mean":
        total = total / present.sum().clamp(min=1)
    return total.to(out_dtype)


def giou_reference(pred: Tensor, target: Tensor, *, eps: float = 1e-7) -> Tensor:
    """Elementwise generalized IoU of matching boxes, shape ``pred.shape[:-1]``."""
    all_present = torch.ones(pred.shape[:-1], dtype=torch.bool, device=pred.device)
    loss = giou_loss_reference(pred, target, valid=all_present, reduction="none", eps=eps)
    return 1 - loss
