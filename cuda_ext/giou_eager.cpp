// The eager CPU path's autograd: synclint::giou_loss_eager, an AutogradCPU
// kernel that records a C++ autograd node (torch::autograd::Function).
//
// A plain `loss.backward()` of the fused loss has nothing left to compute
// (the forward already wrote the gradient, scaled for an upstream gradient of
// 1), so what the Python autograd.Function this replaces cost was all
// overhead, serial and paid on caches the kernel had just streamed through:
// the Function's apply and its Python backward. Here Python makes one
// operator call, and the backward runs no Python at all unless
// create_graph=True asks for a differentiable gradient.
//
// The node calls the kernels through the dispatcher, not directly, so
// profilers and dispatch modes see the same operators as before. Schemas:
// synclint/ops/_library.py.
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mul.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <array>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace synclint {
namespace giou {
namespace {

using at::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using Mask = std::array<bool, 2>;  // (pred, target): which gradients are wanted
using OptionalTensor = std::optional<Tensor>;

template <typename Signature>
c10::TypedOperatorHandle<Signature> find_op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Signature>();
}

// The kernels' operators have no autograd formula of their own (this node is
// theirs), so their calls from it skip the autograd keys. Otherwise each one
// went through autograd's boxed not-implemented fallback (arguments and
// results packed into a stack) before reaching the kernel. Dispatch modes and
// profilers still see the calls (the Python key is below autograd).
using BelowAutograd = at::AutoDispatchBelowADInplaceOrView;

std::tuple<Tensor, Tensor> forward_op(const Tensor& pred, const Tensor& target, const OptionalTensor& valid,
                                      const OptionalTensor& counts, c10::string_view reduction, double eps) {
  static const auto op = find_op<std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const OptionalTensor&,
                                                            const OptionalTensor&, c10::string_view, double)>(
      "synclint::giou_loss_forward");
  const BelowAutograd below_autograd;
  return op.call(pred, target, valid, counts, reduction, eps);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> forward_grad_op(const Tensor& pred, const Tensor& target,
                                                           const OptionalTensor& valid, const OptionalTensor& counts,
                                                           c10::string_view reduction, double eps, Mask mask) {
  static const auto op =
      find_op<std::tuple<Tensor, Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const OptionalTensor&,
                                                         const OptionalTensor&, c10::string_view, double, Mask)>(
          "synclint::giou_loss_forward_grad");
  const BelowAutograd below_autograd;
  return op.call(pred, target, valid, counts, reduction, eps, mask);
}

std::tuple<Tensor, Tensor> backward_op(const Tensor& grad, const Tensor& pred, const Tensor& target,
                                       const OptionalTensor& valid, const OptionalTensor& counts,
                                       const Tensor& num_valid, c10::string_view reduction, double eps, Mask mask) {
  static const auto op =
      find_op<std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, const OptionalTensor&,
                                         const OptionalTensor&, const Tensor&, c10::string_view, double, Mask)>(
          "synclint::giou_loss_backward");
  const BelowAutograd below_autograd;
  return op.call(grad, pred, target, valid, counts, num_valid, reduction, eps, mask);
}

// The composite of differentiable PyTorch ops (a Python kernel) that
// create_graph=True needs: the same formula as the registered autograd's.
std::tuple<Tensor, Tensor> differentiable_backward_op(const Tensor& grad, const Tensor& pred, const Tensor& target,
                                                      const OptionalTensor& valid, const OptionalTensor& counts,
                                                      c10::string_view reduction, double eps, Mask mask) {
  static const auto op =
      find_op<std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, const OptionalTensor&,
                                         const OptionalTensor&, c10::string_view, double, Mask)>(
          "synclint::giou_loss_differentiable_backward");
  return op.call(grad, pred, target, valid, counts, reduction, eps, mask);
}

void scale_grad_op(Tensor& d_box, const Tensor& grad) {
  static const auto op = find_op<void(Tensor&, const Tensor&)>("synclint::giou_loss_scale_grad_");
  const BelowAutograd below_autograd;
  op.call(d_box, grad);
}

// `grad * d_box` in grad's dtype: in place where the dtypes agree (nothing
// at all for an upstream gradient of 1); fp16/bf16 boxes got their gradient
// in float32, rounded once into the box dtype by the multiplication.
Tensor scaled(Tensor d_box, const Tensor& grad) {
  if (d_box.scalar_type() == grad.scalar_type()) {
    scale_grad_op(d_box, grad);
    return d_box;
  }
  Tensor out = at::empty_like(d_box, d_box.options().dtype(grad.scalar_type()));
  return at::mul_out(out, d_box, grad);
}

OptionalTensor optional(const Tensor& tensor) { return tensor.defined() ? OptionalTensor(tensor) : std::nullopt; }

// ctx->saved_data keys.
constexpr const char* kReduction = "reduction";
constexpr const char* kEps = "eps";
constexpr const char* kNeedPred = "need_pred";
constexpr const char* kNeedTarget = "need_target";
constexpr const char* kNumValid = "num_valid";
constexpr const char* kDPred = "d_pred";  // the fused gradients, until the backward hands them over
constexpr const char* kDTarget = "d_target";

// "mean" and "sum": the forward runs giou_loss_forward_grad (loss and
// gradient in one pass) and keeps the gradient in ctx->saved_data, not as a
// saved variable, so the backward can move it out and hand it to autograd
// with no other reference left (AccumulateGrad then adopts it, no copy).
// "none": giou_loss_forward, then giou_loss_backward (its per-box upstream
// gradient is needed first). Under create_graph=True: the differentiable
// composite, whatever the reduction.
struct EagerGIoULoss : public torch::autograd::Function<EagerGIoULoss> {
  static Tensor forward(AutogradContext* ctx, const Tensor& pred, const Tensor& target, const OptionalTensor& valid,
                        const OptionalTensor& counts, c10::string_view reduction, double eps, Mask needs) {
    Tensor loss, num_valid;
    if (reduction != "none") {
      Tensor d_pred, d_target;
      std::tie(loss, num_valid, d_pred, d_target) = forward_grad_op(pred, target, valid, counts, reduction, eps, needs);
      ctx->saved_data[kDPred] = std::move(d_pred);
      ctx->saved_data[kDTarget] = std::move(d_target);
    } else {
      std::tie(loss, num_valid) = forward_op(pred, target, valid, counts, reduction, eps);
    }
    ctx->save_for_backward({pred, target, valid.value_or(Tensor()), counts.value_or(Tensor())});
    ctx->saved_data[kNumValid] = std::move(num_valid);
    ctx->saved_data[kReduction] = std::string(reduction);
    ctx->saved_data[kEps] = eps;
    ctx->saved_data[kNeedPred] = needs[0];
    ctx->saved_data[kNeedTarget] = needs[1];
    return loss;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const Tensor& grad = grads[0];
    const std::string reduction = ctx->saved_data.at(kReduction).toStringRef();
    const double eps = ctx->saved_data.at(kEps).toDouble();
    const Mask needs{ctx->saved_data.at(kNeedPred).toBool(), ctx->saved_data.at(kNeedTarget).toBool()};
    Tensor grad_pred, grad_target;
    if (at::GradMode::is_enabled()) {  // create_graph=True: the gradient must itself be differentiable
      const variable_list saved = ctx->get_saved_variables();
      std::tie(grad_pred, grad_target) = differentiable_backward_op(grad, saved[0], saved[1], optional(saved[2]),
                                                                    optional(saved[3]), reduction, eps, needs);
    } else if (reduction == "none") {
      const variable_list saved = ctx->get_saved_variables();
      std::tie(grad_pred, grad_target) =
          backward_op(grad, saved[0], saved[1], optional(saved[2]), optional(saved[3]),
                      ctx->saved_data.at(kNumValid).toTensor(), reduction, eps, needs);
    } else {
      std::tie(grad_pred, grad_target) = take_fused_gradient(ctx, reduction, eps, needs);
      if (needs[0]) grad_pred = scaled(std::move(grad_pred), grad);
      if (needs[1]) grad_target = scaled(std::move(grad_target), grad);
    }
    // One gradient per forward argument: the boxes', then none for valid,
    // counts, reduction, eps and the mask.
    return {needs[0] ? grad_pred : Tensor(), needs[1] ? grad_target : Tensor(), Tensor(), Tensor(), Tensor(),
            Tensor(), Tensor()};
  }

  // The forward's gradients, moved out of the context. A second backward
  // through a retained graph finds them gone (handed over, and possibly
  // changed since by gradient accumulation) and runs the same fused pass
  // again: the same gradient, bit for bit.
  static std::tuple<Tensor, Tensor> take_fused_gradient(AutogradContext* ctx, const std::string& reduction, double eps,
                                                        Mask needs) {
    c10::IValue& d_pred = ctx->saved_data.at(kDPred);
    c10::IValue& d_target = ctx->saved_data.at(kDTarget);
    if (d_pred.isNone()) {
      const variable_list saved = ctx->get_saved_variables();
      auto [loss, num_valid, again_pred, again_target] =
          forward_grad_op(saved[0], saved[1], optional(saved[2]), optional(saved[3]), reduction, eps, needs);
      return {std::move(again_pred), std::move(again_target)};
    }
    std::tuple<Tensor, Tensor> taken{std::move(d_pred).toTensor(), std::move(d_target).toTensor()};
    d_pred = c10::IValue();
    d_target = c10::IValue();
    return taken;
  }
};

// The grad-mode test mirrors autograd's own: gradients are wanted for the
// inputs that require them, when grad mode is on at the call.
Tensor giou_loss_eager(const Tensor& pred, const Tensor& target, const OptionalTensor& valid,
                       const OptionalTensor& counts, c10::string_view reduction, double eps) {
  const bool grad_mode = at::GradMode::is_enabled();
  const Mask needs{grad_mode && pred.requires_grad(), grad_mode && target.requires_grad()};
  return EagerGIoULoss::apply(pred, target, valid, counts, reduction, eps, needs);
}

}  // namespace
}  // namespace giou
}  // namespace synclint

TORCH_LIBRARY_IMPL(synclint, AutogradCPU, m) { m.impl("giou_loss_eager", &synclint::giou::giou_loss_eager); }
