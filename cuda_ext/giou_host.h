// Host-side argument handling shared by the CPU and CUDA entry points: the
// checks run once per call, before any kernel, and never read tensor data
// (so they cannot force a device-to-host synchronisation).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <c10/util/Optional.h>

#include <string_view>

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
  TORCH_CHECK(pred.dim() >= 1 && pred.size(-1) == 4,
              "giou_loss: boxes must have shape (..., 4), got ", pred.sizes());
  TORCH_CHECK(pred.sizes() == target.sizes(), "giou_loss: pred ", pred.sizes(),
              " and target ", target.sizes(), " must have the same shape");
  TORCH_CHECK(pred.scalar_type() == target.scalar_type(), "giou_loss: pred (",
              pred.scalar_type(), ") and target (", target.scalar_type(),
              ") must have the same dtype");
  TORCH_CHECK(pred.device() == target.device(),
              "giou_loss: pred and target must be on the same device");
  TORCH_CHECK(!(valid.has_value() && counts.has_value()),
              "giou_loss: pass at most one of `valid` and `counts`");
  if (valid.has_value()) {
    TORCH_CHECK(valid->scalar_type() == at::kBool, "giou_loss: valid must be bool");
    TORCH_CHECK(valid->sizes() == pred.sizes().slice(0, pred.dim() - 1),
                "giou_loss: valid must have shape ", pred.sizes().slice(0, pred.dim() - 1),
                ", got ", valid->sizes());
    TORCH_CHECK(valid->device() == pred.device(),
                "giou_loss: valid must be on the boxes' device");
    return ValidityMode::Mask;
  }
  if (counts.has_value()) {
    TORCH_CHECK(pred.dim() == 3, "giou_loss: counts needs boxes of shape (B, N, 4)");
    TORCH_CHECK(counts->scalar_type() == at::kLong, "giou_loss: counts must be int64");
    TORCH_CHECK(counts->dim() == 1 && counts->size(0) == pred.size(0),
                "giou_loss: counts must have shape (", pred.size(0), ",), got ",
                counts->sizes());
    TORCH_CHECK(counts->device() == pred.device(),
                "giou_loss: counts must be on the boxes' device");
    return ValidityMode::Counts;
  }
  return ValidityMode::Padding;
}

// Number of slots per image: the box index i belongs to image i / slots.
inline int64_t slots_per_image(const at::Tensor& pred) {
  return pred.dim() >= 2 ? pred.size(-2) : 1;
}

}  // namespace giou
}  // namespace synclint
