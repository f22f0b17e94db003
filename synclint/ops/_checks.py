"""Argument checks shared by every path of the GIoU loss.

The public :func:`synclint.ops.giou_loss` runs them before choosing the
compiled kernel or the pure-PyTorch fallback, the fake (meta) kernels run them
while tracing, and ``cuda_ext/giou_host.h`` mirrors them in C++ for direct
callers of the operators. So a bad input gets the same error whichever path
would have run, instead of a silently broadcast or truncated loss on one of
them. The checks read shapes, dtypes and devices only, never tensor data
(nothing here can synchronise with a device), and are plain ``if`` statements on them,
which ``torch.compile`` traces into guards (``torch._check`` with a message
naming a tensor is a graph break).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

__all__ = ["BOX_DTYPES", "REDUCTIONS", "check_inputs", "check_reduction", "normalize_validity", "prepare"]

REDUCTIONS = ("mean", "sum", "none")
BOX_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def _require(condition: bool, message: Callable[[], str]) -> None:
    if not condition:
        raise RuntimeError(message())


def check_reduction(reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"giou_loss: reduction must be one of {REDUCTIONS}, got {reduction!r}")


def normalize_validity(
    valid: Tensor | None, counts: Tensor | None
) -> tuple[Tensor | None, Tensor | None]:
    """``valid`` as bool and ``counts`` as int64, converted on their device.

    Integer masks (0/1) and integer counts of any width are accepted; floating
    point ones are not (a fractional count or mask has no meaning).
    """
    if valid is not None:
        _require(
            not valid.is_floating_point() and not valid.is_complex(),
            lambda: f"giou_loss: valid must be a bool (or integer 0/1) mask, got {valid.dtype}",
        )
        if valid.dtype != torch.bool:
            valid = valid.to(torch.bool)
    if counts is not None:
        _require(
            not counts.is_floating_point() and not counts.is_complex() and counts.dtype != torch.bool,
            lambda: f"giou_loss: counts must be an integer tensor, got {counts.dtype}",
        )
        if counts.dtype != torch.int64:
            counts = counts.to(torch.int64)
    return valid, counts


def prepare(
    pred: Tensor, target: Tensor, valid: Tensor | None, counts: Tensor | None
) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
    """The public functions' argument handling: convert, then :func:`check_inputs`.

    Mismatched box dtypes are promoted on the device (fp16 predictions with
    fp32 targets, or integer targets as in the seed's data); ``valid`` and
    ``counts`` are normalised by :func:`normalize_validity`.
    """
    if pred.dtype != target.dtype:
        common = torch.promote_types(pred.dtype, target.dtype)
        pred, target = pred.to(common), target.to(common)
    valid, counts = normalize_validity(valid, counts)
    check_inputs(pred, target, valid, counts)
    return pred, target, valid, counts


def check_inputs(pred: Tensor, target: Tensor, valid: Tensor | None, counts: Tensor | None) -> None:
    """Raise ``RuntimeError`` unless the arguments are what the kernels accept.

    ``pred`` and ``target``: the same floating dtype, shape ``(..., 4)``
    (equal, never broadcast) and device. ``valid``: bool, shape
    ``pred.shape[:-1]``. ``counts``: int64, shape ``(B,)`` for ``(B, N, 4)``
    boxes. At most one of ``valid`` and ``counts``; both on the boxes' device.
    """
    _require(
        pred.dtype in BOX_DTYPES,
        lambda: f"giou_loss: boxes must be float32, float16, bfloat16 or float64, got {pred.dtype}",
    )
    _require(
        pred.dtype == target.dtype,
        lambda: f"giou_loss: pred ({pred.dtype}) and target ({target.dtype}) must have the same dtype",
    )
    _require(
        pred.dim() >= 1 and pred.shape[-1] == 4,
        lambda: f"giou_loss: boxes must have shape (..., 4), got {tuple(pred.shape)}",
    )
    _require(
        pred.shape == target.shape,
        lambda: f"giou_loss: pred {tuple(pred.shape)} and target {tuple(target.shape)} "
        "must have the same shape (no broadcasting)",
    )
    _check_device("target", target, pred)
    _require(
        valid is None or counts is None, lambda: "giou_loss: pass at most one of `valid` and `counts`"
    )
    box_shape = pred.shape[:-1]
    if valid is not None:
        _require(valid.dtype == torch.bool, lambda: f"giou_loss: valid must be bool, got {valid.dtype}")
        _require(
            valid.shape == box_shape,
            lambda: f"giou_loss: valid must have shape {tuple(box_shape)}, got {tuple(valid.shape)}",
        )
        _check_device("valid", valid, pred)
    if counts is not None:
        _require(
            pred.dim() == 3,
            lambda: f"giou_loss: counts needs boxes of shape (B, N, 4), got {tuple(pred.shape)}",
        )
        _require(
            counts.dtype == torch.int64, lambda: f"giou_loss: counts must be int64, got {counts.dtype}"
        )
        _require(
            counts.dim() == 1 and counts.shape[0] == pred.shape[0],
            lambda: f"giou_loss: counts must have shape ({pred.shape[0]},), got {tuple(counts.shape)}",
        )
        _check_device("counts", counts, pred)


def _check_device(name: str, tensor: Tensor, pred: Tensor) -> None:
    # Strict equality: a CPU `counts` beside CUDA boxes would need a blocking
    # upload, and a `meta` tensor has no data for a kernel to read.
    _require(
        tensor.device == pred.device,
        lambda: f"giou_loss: {name} is on {tensor.device} but the boxes (pred) are on {pred.device}",
    )
