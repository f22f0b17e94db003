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
* ``synclint::giou_loss_forward_grad(pred, target, valid?, counts?,
  reduction, eps, output_mask) -> (loss, num_valid, d_pred, d_target)`` (a
  CPU kernel only): the eager CPU path's forward, which also returns the
  gradient of the loss w.r.t. the requested boxes in the math dtype (one pass
  over the boxes for loss and gradient). ``reduction`` is ``"mean"`` or
  ``"sum"``.
* ``synclint::giou_loss_scale_grad_(d_box!, grad)`` (a CPU kernel only):
  ``d_box *= grad`` in place, nothing at all when ``grad`` is 1; the eager
  path's backward.
* ``synclint::giou_loss_eager(pred, target, valid?, counts?, reduction, eps)
  -> loss`` (an AutogradCPU kernel only, ``cuda_ext/giou_eager.cpp``): the
  eager CPU path, the loss with a C++ autograd node over the operators above.
* ``synclint::giou_loss_differentiable_backward(grad, pred, target, valid?,
  counts?, reduction, eps, output_mask) -> (grad_pred, grad_target)`` (a
  Python ``CompositeImplicitAutograd`` kernel): the gradient as a composite
  of differentiable ops, which that node calls under ``create_graph=True``.

``torch.compile`` sees ``giou_loss_forward`` with its registered autograd
(:func:`register_autograd`); eager CPU calls that need a gradient go through
``giou_loss_eager`` (see :func:`eager_loss`).

Registration is lazy (:func:`ensure_registered`, run before a kernel library
is loaded): importing ``synclint.ops`` must stay cheap, and the fake-tensor
and autograd machinery that registration touches is not.
"""

from __future__ import annotations

import threading

import torch
from torch import Tensor

from synclint.ops._checks import check_inputs
from synclint.ops.reference import giou_loss_reference

NAMESPACE = "synclint"
_OPS = (
    "giou_loss_forward",
    "giou_loss_backward",
    "giou_loss_forward_grad",
    "giou_loss_scale_grad_",
    "giou_loss_eager",
    "giou_loss_differentiable_backward",
)

_library: torch.library.Library | None = None
_lock = threading.Lock()


def ensure_registered() -> None:
    """Define the operators with their fake kernels and autograd, once per process."""
    global _library
    if _library is not None:
        return
    with _lock:
        if _library is not None:
            return
        lib = torch.library.Library(NAMESPACE, "FRAGMENT")
        lib.define(
            "giou_loss_forward(Tensor pred, Tensor target, Tensor? valid, Tensor? counts, "
            "str reduction, float eps) -> (Tensor, Tensor)"
        )
        lib.define(
            "giou_loss_backward(Tensor grad, Tensor pred, Tensor target, Tensor? valid, "
            "Tensor? counts, Tensor num_valid, str reduction, float eps, bool[2] output_mask) "
            "-> (Tensor, Tensor)"
        )
        lib.define(
            "giou_loss_forward_grad(Tensor pred, Tensor target, Tensor? valid, Tensor? counts, "
            "str reduction, float eps, bool[2] output_mask) -> (Tensor, Tensor, Tensor, Tensor)"
        )
        lib.define("giou_loss_scale_grad_(Tensor(a!) d_box, Tensor grad) -> ()")
        lib.define(
            "giou_loss_eager(Tensor pred, Tensor target, Tensor? valid, Tensor? counts, str reduction, "
            "float eps) -> Tensor"
        )
        lib.define(
            "giou_loss_differentiable_backward(Tensor grad, Tensor pred, Tensor target, Tensor? valid, "
            "Tensor? counts, str reduction, float eps, bool[2] output_mask) -> (Tensor, Tensor)"
        )
        lib.impl("giou_loss_differentiable_backward", _differentiable_backward, "CompositeImplicitAutograd")
        torch.library.register_fake(f"{NAMESPACE}::giou_loss_forward", _forward_fake, lib=lib)
        torch.library.register_fake(f"{NAMESPACE}::giou_loss_forward_grad", _forward_grad_fake, lib=lib)
        torch.library.register_fake(f"{NAMESPACE}::giou_loss_backward", _backward_fake, lib=lib)
        torch.library.register_fake(f"{NAMESPACE}::giou_loss_scale_grad_", _scale_grad_fake, lib=lib)
        torch.library.register_autograd(
            f"{NAMESPACE}::giou_loss_forward", _backward, setup_context=_setup_context, lib=lib
        )
        _library = lib


def __getattr__(name: str):
    # `_library.giou_loss_forward` / `_library.giou_loss_backward`: the op
    # overload packets, registered on first access.
    if name in _OPS:
        ensure_registered()
        return getattr(torch.ops.synclint, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ------------------------------------------------------------------ fake kernels
# They must describe exactly what the real kernels return: contiguous tensors
# on the boxes' device, whatever the inputs' strides (a permuted `pred` gives a
# contiguous gradient), or compiled graphs mis-stride their buffers.


def _forward_fake(pred, target, valid, counts, reduction, eps):
    check_inputs(pred, target, valid, counts)
    loss_shape = pred.shape[:-1] if reduction == "none" else ()
    return pred.new_empty(loss_shape), pred.new_empty((), dtype=torch.int64)


def _backward_fake(grad, pred, target, valid, counts, num_valid, reduction, eps, output_mask):
    check_inputs(pred, target, valid, counts)
    expected = pred.shape[:-1] if reduction == "none" else ()
    if grad.shape != expected:
        raise RuntimeError(
            f"giou_loss_backward: grad must have shape {tuple(expected)}, got {tuple(grad.shape)}"
        )
    for name, tensor in (("grad", grad), ("num_valid", num_valid)):
        if tensor.device != pred.device:
            raise RuntimeError(
                f"giou_loss_backward: {name} is on {tensor.device} but the boxes (pred) are on {pred.device}"
            )
    need_pred, need_target = output_mask
    grad_pred = pred.new_empty(pred.shape if need_pred else (0,))
    grad_target = target.new_empty(target.shape if need_target else (0,))
    return grad_pred, grad_target


def _math_dtype(dtype: torch.dtype) -> torch.dtype:
    # What the kernels compute in (at::opmath_type): float64 for float64, else float32.
    return torch.float64 if dtype == torch.float64 else torch.float32


def _check_summed(op: str, reduction: str) -> None:
    if reduction not in ("mean", "sum"):
        raise RuntimeError(f"{op}: reduction must be 'mean' or 'sum', got {reduction!r}")


def _forward_grad_fake(pred, target, valid, counts, reduction, eps, output_mask):
    check_inputs(pred, target, valid, counts)
    _check_summed("giou_loss_forward_grad", reduction)
    need_pred, need_target = output_mask
    math = _math_dtype(pred.dtype)
    return (
        pred.new_empty(()),
        pred.new_empty((), dtype=torch.int64),
        pred.new_empty(pred.shape if need_pred else (0,), dtype=math),
        target.new_empty(target.shape if need_target else (0,), dtype=math),
    )


def _scale_grad_fake(d_box, grad):
    if grad.dim() != 0 or grad.dtype != d_box.dtype or grad.device != d_box.device:
        raise RuntimeError(
            f"giou_loss_scale_grad_: grad must be a scalar of d_box's dtype and device, got {tuple(grad.shape)} "
            f"{grad.dtype} on {grad.device} for {d_box.dtype} on {d_box.device}"
        )


# ---------------------------------------------------------------------- autograd


def _setup_context(ctx, inputs, output):
    pred, target, valid, counts, reduction, eps = inputs
    ctx.save_for_backward(pred, target, valid, counts, output[1])
    ctx.reduction = reduction
    ctx.eps = eps
    # num_valid (an integer output) never has a gradient: without this, autograd
    # fills a zeros tensor for it on every backward (one more kernel on CUDA).
    ctx.set_materialize_grads(False)


def _backward(ctx, grad_loss, _grad_num_valid):
    pred, target, valid, counts, num_valid = ctx.saved_tensors
    need_pred, need_target = ctx.needs_input_grad[:2]
    if grad_loss is None:  # the loss did not reach what is differentiated
        return None, None, None, None, None, None
    if torch.is_grad_enabled():
        # create_graph=True (a gradient penalty, a Hessian-vector product):
        # the gradient must itself be differentiable, so compute it as a
        # composite of differentiable PyTorch ops, autograd through the
        # reference, which shares the kernels' formula and subgradients.
        grad_pred, grad_target = _differentiable_grads(
            grad_loss, pred, target, valid, counts, ctx.reduction, ctx.eps, need_pred, need_target
        )
    else:
        grad_pred, grad_target = torch.ops.synclint.giou_loss_backward(
            grad_loss, pred, target, valid, counts, num_valid, ctx.reduction, ctx.eps,
            [need_pred, need_target],
        )
    return (
        grad_pred if need_pred else None,
        grad_target if need_target else None,
        None, None, None, None,
    )


def _differentiable_grads(
    grad_loss: Tensor,
    pred: Tensor,
    target: Tensor,
    valid: Tensor | None,
    counts: Tensor | None,
    reduction: str,
    eps: float,
    need_pred: bool,
    need_target: bool,
) -> tuple[Tensor | None, Tensor | None]:
    wanted = [x for x, need in ((pred, need_pred), (target, need_target)) if need]
    if not wanted:
        return None, None
    # The saved inputs carry their autograd history, so the result is
    # differentiable w.r.t. the original leaves and w.r.t. `grad_loss`.
    loss = giou_loss_reference(pred, target, valid=valid, counts=counts, reduction=reduction, eps=eps)
    grads = list(torch.autograd.grad(loss, wanted, grad_loss, create_graph=True, allow_unused=True))
    for i, (tensor, grad) in enumerate(zip(wanted, grads)):
        if grad is None:  # all slots absent: no path from the loss
            grads[i] = torch.zeros_like(tensor)
    grad_pred = grads.pop(0) if need_pred else None
    grad_target = grads.pop(0) if need_target else None
    return grad_pred, grad_target


def _differentiable_backward(grad, pred, target, valid, counts, reduction, eps, output_mask):
    # giou_loss_differentiable_backward: the eager path's C++ node calls it
    # under create_graph=True. A gradient not asked for comes back empty.
    need_pred, need_target = output_mask
    grads = _differentiable_grads(grad, pred, target, valid, counts, reduction, eps, need_pred, need_target)
    return tuple(g if g is not None else box.new_empty(0) for g, box in zip(grads, (pred, target)))


# ------------------------------------------------------------ eager CPU path
# Outside torch.compile, a CPU call that needs a gradient skips the
# torch.library autograd wrapper and any Python autograd.Function: one call
# of giou_loss_eager, whose C++ autograd node (cuda_ext/giou_eager.cpp) runs,
# for "mean" and "sum", the fused forward (one pass computes the loss and its
# gradient w.r.t. the boxes) and hands that gradient over in the backward (no
# copy), scaled in place by the upstream gradient unless that is 1 (no pass
# at all: a plain `loss.backward()`). What a Python autograd.Function costs
# (its apply and its Python backward, 0.04-0.05 ms per forward+backward on
# caches the kernel has just streamed through) is serial, so it also capped
# the gain from threads.


def eager_loss(
    pred: Tensor, target: Tensor, valid: Tensor | None, counts: Tensor | None, reduction: str, eps: float
) -> Tensor:
    """The loss on CPU in eager mode (checked inputs, a loaded kernel)."""
    if torch.is_grad_enabled() and (pred.requires_grad or target.requires_grad):
        return torch.ops.synclint.giou_loss_eager(pred, target, valid, counts, reduction, eps)
    return torch.ops.synclint.giou_loss_forward(pred, target, valid, counts, reduction, eps)[0]
