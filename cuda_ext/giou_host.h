// Host-side argument handling shared by the CPU and CUDA entry points: the
// checks run once per call, before any kernel, and never read tensor data
// (so they cannot force a device-to-host synchronisation). They mirror
// synclint/ops/_checks.py, which the Python entry point, the fallback and the
// fake kernels run, so every path rejects the same inputs.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <c10/util/Optional.h>

#include <string_view>
#include <type_traits>

#include "giou.h"

namespace synclint {
namespace giou {

inline Reduction parse_reduction(std::string_view reduction) {
  if (reduction == "mean") return Reduction::Mean;
  if (reduction == "sum") return Reduction::Sum;
  if (reduction == "none") return Reduction::None;
  TORCH_CHECK(false, "giou_loss: reduction must be 'mean', 'sum' or 'none', got '",
              std::string(reduction), "'");
}

// How the kernels decide which slots hold a box.
enum class ValidityMode { Padding, Mask, Counts };

inline ValidityMode check_inputs(const at::Tensor& pred, const at::Tensor& target,
                                 const std::optional<at::Tensor>& valid,
                                 const std::optional<at::Tensor>& counts) {
  const auto dtype = pred.scalar_type();
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16 || dtype == at::kDouble,
              "giou_loss: boxes must be float32, float16, bfloat16 or float64, got ", dtype);
  TORCH_CHECK(pred.dim() >= 1 && pred.size(-1) == 4,
              "giou_loss: boxes must have shape (..., 4), got ", pred.sizes());
  TORCH_CHECK(pred.sizes() == target.sizes(), "giou_loss: pred ", pred.sizes(),
              " and target ", target.sizes(), " must have the same shape");
  TORCH_CHECK(pred.scalar_type() == target.scalar_type(), "giou_loss: pred (",
              pred.scalar_type(), ") and target (", target.scalar_type(),
              ") must have the same dtype");
  TORCH_CHECK(pred.device() == target.device(), "giou_loss: target is on ", target.device(),
              " but the boxes (pred) are on ", pred.device());
  TORCH_CHECK(!(valid.has_value() && counts.has_value()),
              "giou_loss: pass at most one of `valid` and `counts`");
  if (valid.has_value()) {
    TORCH_CHECK(valid->scalar_type() == at::kBool, "giou_loss: valid must be bool");
    TORCH_CHECK(valid->sizes() == pred.sizes().slice(0, pred.dim() - 1),
                "giou_loss: valid must have shape ", pred.sizes().slice(0, pred.dim() - 1),
                ", got ", valid->sizes());
    TORCH_CHECK(valid->device() == pred.device(), "giou_loss: valid is on ", valid->device(),
                " but the boxes (pred) are on ", pred.device());
    return ValidityMode::Mask;
  }
  if (counts.has_value()) {
    TORCH_CHECK(pred.dim() == 3, "giou_loss: counts needs boxes of shape (B, N, 4)");
    TORCH_CHECK(counts->scalar_type() == at::kLong, "giou_loss: counts must be int64");
    TORCH_CHECK(counts->dim() == 1 && counts->size(0) == pred.size(0),
                "giou_loss: counts must have shape (", pred.size(0), ",), got ",
                counts->sizes());
    TORCH_CHECK(counts->device() == pred.device(), "giou_loss: counts is on ", counts->device(),
                " but the boxes (pred) are on ", pred.device());
    return ValidityMode::Counts;
  }
  return ValidityMode::Padding;
}

// The backward's extra inputs: the upstream gradient and the forward's count.
inline void check_backward_inputs(const at::Tensor& grad, const at::Tensor& pred,
                                  const at::Tensor& num_valid, Reduction reduction) {
  TORCH_CHECK(grad.device() == pred.device(), "giou_loss_backward: grad is on ", grad.device(),
              " but the boxes (pred) are on ", pred.device());
  TORCH_CHECK(num_valid.device() == pred.device(), "giou_loss_backward: num_valid is on ",
              num_valid.device(), " but the boxes (pred) are on ", pred.device());
  TORCH_CHECK(num_valid.scalar_type() == at::kLong && num_valid.numel() == 1,
              "giou_loss_backward: num_valid must be an int64 scalar");
  if (reduction == Reduction::None) {
    TORCH_CHECK(grad.sizes() == pred.sizes().slice(0, pred.dim() - 1),
                "giou_loss_backward: grad must have shape ", pred.sizes().slice(0, pred.dim() - 1),
                ", got ", grad.sizes());
  } else {
    TORCH_CHECK(grad.dim() == 0, "giou_loss_backward: grad must be a scalar, got ", grad.sizes());
  }
}

// Calls fn(std::true_type{}) or fn(std::false_type{}) as `value` says: a kernel
// instantiated for a flag known only at run time (the CPU gradient loops'
// targets, the CUDA kernels' vector box accesses).
template <typename Fn>
void with_bool(bool value, Fn&& fn) {
  if (value) {
    fn(std::true_type{});
  } else {
    fn(std::false_type{});
  }
}

// Number of slots per image: the box index i belongs to image i / slots.
inline int64_t slots_per_image(const at::Tensor& pred) {
  return pred.dim() >= 2 ? pred.size(-2) : 1;
}

}  // namespace giou
}  // namespace synclint
