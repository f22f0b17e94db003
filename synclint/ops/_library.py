"""``torch.library`` registration of the fused GIoU loss operators.

The schemas, fake (meta) implementations and the autograd formula live here,
in Python, so they exist whether or not a compiled kernel could be built; the
C++/CUDA libraries (``cuda_ext/``) only add device kernels to these schemas.

* ``synclint::giou_loss_forward(pred, target, valid?, counts?, reduction, eps)
  -> (loss, num_valid)``: the fused loss and the number of present boxes
  (int64 scalar, kept for the backward of ``reduction="mean"``).
* ``synclint::giou_loss_backward(grad, pred, target, valid?, counts?,
  num_valid, reduction, eps, output_mask) -> (grad_pred, grad_target)``: the
  closed-form gradient; a gradient not asked for in ``output_mask`` comes
  back as an empty tensor.
"""

from __future__ import annotations

import torch
from torch import Tensor

NAMESPACE = "synclint"

_lib = torch.library.Library(NAMESPACE, "FRAGMENT")
_lib.define(
    "giou_loss_forward(Tensor pred, Tensor target, Tensor? valid, Tensor? counts, "
    "str reduction, float eps) -> (Tensor, Tensor)"
)
_lib.define(
    "giou_loss_backward(Tensor grad, Tensor pred, Tensor target, Tensor? valid, "
    "Tensor? counts, Tensor num_valid, str reduction, float eps, bool[2] output_mask) "
    "-> (Tensor, Tensor)"
)

giou_loss_forward = torch.ops.synclint.giou_loss_forward
giou_loss_backward = torch.ops.synclint.giou_loss_backward


def _check_boxes(pred: Tensor, target: Tensor) -> None:
    torch._check(pred.dim() >= 1 and pred.shape[-1] == 4, lambda: "boxes must be (..., 4)")
    torch._check(pred.shape == target.shape, lambda: "pred and target shapes differ")
    torch._check(pred.dtype == target.dtype, lambda: "pred and target dtypes differ")


@torch.library.register_fake(f"{NAMESPACE}::giou_loss_forward")
def _giou_loss_forward_fake(pred, target, valid, counts, reduction, eps):
    _check_boxes(pred, target)
    loss_shape = pred.shape[:-1] if reduction == "none" else ()
    return pred.new_empty(loss_shape), pred.new_empty((), dtype=torch.int64)


@torch.library.register_fake(f"{NAMESPACE}::giou_loss_backward")
def _giou_loss_backward_fake(
    grad, pred, target, valid, counts, num_valid, reduction, eps, output_mask
):
    _check_boxes(pred, target)
    need_pred, need_target = output_mask
    grad_pred = torch.empty_like(pred) if need_pred else pred.new_empty((0,))
    grad_target = torch.empty_like(target) if need_target else target.new_empty((0,))
    return grad_pred, grad_target


def _setup_context(ctx, inputs, output):
    pred, target, valid, counts, reduction, eps = inputs
    ctx.save_for_backward(pred, target, valid, counts, output[1])
    ctx.reduction = reduction
    ctx.eps = eps


def _backward(ctx, grad_loss, _grad_num_valid):
    pred, target, valid, counts, num_valid = ctx.saved_tensors
    need_pred, need_target = ctx.needs_input_grad[:2]
    grad_pred, grad_target = giou_loss_backward(
        grad_loss, pred, target, valid, counts, num_valid, ctx.reduction, ctx.eps,
        [need_pred, need_target],
    )
    return (
        grad_pred if need_pred else None,
        grad_target if need_target else None,
        None, None, None, None,
    )


torch.library.register_autograd(
    f"{NAMESPACE}::giou_loss_forward", _backward, setup_context=_setup_context
)
