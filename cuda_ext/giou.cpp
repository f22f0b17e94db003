// CPU kernels of synclint::giou_loss_forward / giou_loss_backward.
//
// The op schemas live in Python (synclint/ops/_library.py) next to their fake
// implementations and autograd formula; this file only registers CPU kernels.
// Each kernel is one pass over the boxes: at::parallel_for over fixed-size
// chunks, and a branch-free inner loop the compiler vectorises (the validity
// rule is a template parameter so it costs no branch per box).
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "giou.h"
#include "giou_host.h"

namespace synclint {
namespace giou {
namespace {

// Validity rules: each answers "is box i present?" for one contiguous run of
// boxes. Counts mode is applied per image, so within a run it is `i < end`.
struct PaddingRule {
  template <typename T>
  bool operator()(int64_t, T tx1, T ty1, T tx2, T ty2) const {
    return !is_padding(tx1, ty1, tx2, ty2);
  }
};

struct MaskRule {
  const bool* mask;
  template <typename T>
  bool operator()(int64_t i, T, T, T, T) const {
    return mask[i];
  }
};

struct PrefixRule {
  int64_t end;  // boxes [run start, end) are present
  template <typename T>
  bool operator()(int64_t i, T, T, T, T) const {
    return i < end;
  }
};

// Calls fn(run_begin, run_end, rule) over [begin, end), split so each run
// gets a rule it can apply without branching on the mode.
template <typename Fn>
void for_each_run(ValidityMode mode, const at::Tensor& valid, const at::Tensor& counts,
                  int64_t slots, int64_t begin, int64_t end, Fn&& fn) {
  switch (mode) {
    case ValidityMode::Padding:
      fn(begin, end, PaddingRule{});
      return;
    case ValidityMode::Mask:
      fn(begin, end, MaskRule{valid.const_data_ptr<bool>()});
      return;
    case ValidityMode::Counts: {
      const int64_t* count = counts.const_data_ptr<int64_t>();
      for (int64_t run_begin = begin; run_begin < end;) {
        const int64_t image = run_begin / slots;
        const int64_t image_begin = image * slots;
        const int64_t run_end = std::min(end, image_begin + slots);
        const int64_t present = std::clamp<int64_t>(count[image], 0, slots);
        fn(run_begin, run_end, PrefixRule{image_begin + present});
        run_begin = run_end;
      }
      return;
    }
  }
}

struct Partial {
  double loss_sum = 0.0;
  int64_t num_valid = 0;
};

// Loss over boxes [begin, end): returns the run's sum and count and, when
// `per_box` is non-null (reduction="none"), stores each box's loss.
template <typename scalar_t, typename Rule>
Partial forward_run(const scalar_t* __restrict__ pred, const scalar_t* __restrict__ target,
                    scalar_t* __restrict__ per_box, int64_t begin, int64_t end,
                    at::opmath_type<scalar_t> eps, Rule is_valid) {
  using T = at::opmath_type<scalar_t>;
  T sum = 0;
  int64_t count = 0;
#pragma omp simd reduction(+ : sum, count)
  for (int64_t i = begin; i < end; ++i) {
    const T px1 = pred[4 * i], py1 = pred[4 * i + 1], px2 = pred[4 * i + 2], py2 = pred[4 * i + 3];
    const T tx1 = target[4 * i], ty1 = target[4 * i + 1], tx2 = target[4 * i + 2],
            ty2 = target[4 * i + 3];
    const bool present = is_valid(i, tx1, ty1, tx2, ty2);
    // Select, not multiply: a padded slot must not turn inf/NaN into the sum.
    const T loss = present ? box_loss(px1, py1, px2, py2, tx1, ty1, tx2, ty2, eps) : T(0);
    sum += loss;
    count += present ? 1 : 0;
    if (per_box != nullptr) per_box[i] = static_cast<scalar_t>(loss);
  }
  return {static_cast<double>(sum), count};
}

template <typename scalar_t, typename Rule>
void backward_run(const scalar_t* __restrict__ pred, const scalar_t* __restrict__ target,
                  const scalar_t* __restrict__ grad_per_box, at::opmath_type<scalar_t> grad_scale,
                  scalar_t* __restrict__ grad_pred, scalar_t* __restrict__ grad_target,
                  int64_t begin, int64_t end, at::opmath_type<scalar_t> eps, Rule is_valid) {
  using T = at::opmath_type<scalar_t>;
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) {
    const T px1 = pred[4 * i], py1 = pred[4 * i + 1], px2 = pred[4 * i + 2], py2 = pred[4 * i + 3];
    const T tx1 = target[4 * i], ty1 = target[4 * i + 1], tx2 = target[4 * i + 2],
            ty2 = target[4 * i + 3];
    const bool present = is_valid(i, tx1, ty1, tx2, ty2);
    const T g = grad_per_box != nullptr ? static_cast<T>(grad_per_box[i]) : grad_scale;
    const BoxGrads<T> d =
        box_loss_backward(px1, py1, px2, py2, tx1, ty1, tx2, ty2, eps, g);
    for (int k = 0; k < 4; ++k) {
      // Absent slots get exact zeros, even where their math is inf/NaN.
      if (grad_pred != nullptr) grad_pred[4 * i + k] = static_cast<scalar_t>(present ? d.p[k] : T(0));
      if (grad_target != nullptr) grad_target[4 * i + k] = static_cast<scalar_t>(present ? d.t[k] : T(0));
    }
  }
}

std::tuple<at::Tensor, at::Tensor> giou_loss_forward_cpu(
    const at::Tensor& pred_in, const at::Tensor& target_in,
    const std::optional<at::Tensor>& valid_in, const std::optional<at::Tensor>& counts_in,
    c10::string_view reduction_name, double eps) {
  const ValidityMode mode = check_inputs(pred_in, target_in, valid_in, counts_in);
  const Reduction reduction = parse_reduction(reduction_name);
  const at::Tensor pred = pred_in.contiguous();
  const at::Tensor target = target_in.contiguous();
  const at::Tensor valid = valid_in.has_value() ? valid_in->contiguous() : at::Tensor();
  const at::Tensor counts = counts_in.has_value() ? counts_in->contiguous() : at::Tensor();
  const int64_t num_boxes = pred.numel() / 4;
  const int64_t slots = slots_per_image(pred);
  const int64_t num_chunks = (num_boxes + kBoxesPerChunk - 1) / kBoxesPerChunk;

  const auto box_shape = pred.sizes().slice(0, pred.dim() - 1);
  at::Tensor per_box = reduction == Reduction::None ? pred.new_empty(box_shape) : at::Tensor();
  std::vector<Partial> partials(num_chunks);

  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, pred.scalar_type(), "giou_loss_forward_cpu", [&] {
    using T = at::opmath_type<scalar_t>;
    const scalar_t* p = pred.const_data_ptr<scalar_t>();
    const scalar_t* t = target.const_data_ptr<scalar_t>();
    scalar_t* out = per_box.defined() ? per_box.mutable_data_ptr<scalar_t>() : nullptr;
    at::parallel_for(0, num_chunks, 1, [&](int64_t chunk_begin, int64_t chunk_end) {
      for (int64_t chunk = chunk_begin; chunk < chunk_end; ++chunk) {
        const int64_t begin = chunk * kBoxesPerChunk;
        const int64_t end = std::min(num_boxes, begin + kBoxesPerChunk);
        Partial& acc = partials[chunk];
        for_each_run(mode, valid, counts, slots, begin, end, [&](int64_t b, int64_t e, auto rule) {
          const Partial run = forward_run<scalar_t>(p, t, out, b, e, static_cast<T>(eps), rule);
          acc.loss_sum += run.loss_sum;
          acc.num_valid += run.num_valid;
        });
      }
    });
  });

  // Add the chunk partials in a fixed order: same answer for any thread count.
  Partial total;
  for (const Partial& part : partials) {
    total.loss_sum += part.loss_sum;
    total.num_valid += part.num_valid;
  }
  at::Tensor num_valid = pred.new_empty({}, pred.options().dtype(at::kLong));
  num_valid.fill_(total.num_valid);
  if (reduction == Reduction::None) return {per_box, num_valid};
  const double loss = reduction == Reduction::Mean
                          ? total.loss_sum / static_cast<double>(std::max<int64_t>(total.num_valid, 1))
                          : total.loss_sum;
  at::Tensor loss_tensor = pred.new_empty({});
  loss_tensor.fill_(loss);
  return {loss_tensor, num_valid};
}

std::tuple<at::Tensor, at::Tensor> giou_loss_backward_cpu(
    const at::Tensor& grad_loss_in, const at::Tensor& pred_in, const at::Tensor& target_in,
    const std::optional<at::Tensor>& valid_in, const std::optional<at::Tensor>& counts_in,
    const at::Tensor& num_valid, c10::string_view reduction_name, double eps,
    std::array<bool, 2> output_mask) {
  const ValidityMode mode = check_inputs(pred_in, target_in, valid_in, counts_in);
  const Reduction reduction = parse_reduction(reduction_name);
  const at::Tensor pred = pred_in.contiguous();
  const at::Tensor target = target_in.contiguous();
  const at::Tensor valid = valid_in.has_value() ? valid_in->contiguous() : at::Tensor();
  const at::Tensor counts = counts_in.has_value() ? counts_in->contiguous() : at::Tensor();
  const at::Tensor grad_loss = grad_loss_in.to(pred.scalar_type()).contiguous();
  if (reduction == Reduction::None) {
    TORCH_CHECK(grad_loss.sizes() == pred.sizes().slice(0, pred.dim() - 1),
                "giou_loss_backward: grad has the wrong shape ", grad_loss.sizes());
  } else {
    TORCH_CHECK(grad_loss.numel() == 1, "giou_loss_backward: expected a scalar grad");
  }
  const int64_t num_boxes = pred.numel() / 4;
  const int64_t slots = slots_per_image(pred);
  // Unrequested gradients come back as empty tensors (autograd maps them to None).
  at::Tensor grad_pred = output_mask[0] ? pred.new_empty(pred.sizes()) : pred.new_empty({0});
  at::Tensor grad_target = output_mask[1] ? target.new_empty(target.sizes()) : target.new_empty({0});

  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, pred.scalar_type(), "giou_loss_backward_cpu", [&] {
    using T = at::opmath_type<scalar_t>;
    const scalar_t* p = pred.const_data_ptr<scalar_t>();
    const scalar_t* t = target.const_data_ptr<scalar_t>();
    const scalar_t* g_box = reduction == Reduction::None ? grad_loss.const_data_ptr<scalar_t>() : nullptr;
    T g_scale = 0;
    if (reduction != Reduction::None) {
      g_scale = static_cast<T>(*grad_loss.const_data_ptr<scalar_t>());
      if (reduction == Reduction::Mean) {
        g_scale /= static_cast<T>(std::max<int64_t>(num_valid.item<int64_t>(), 1));
      }
    }
    scalar_t* gp = output_mask[0] ? grad_pred.mutable_data_ptr<scalar_t>() : nullptr;
    scalar_t* gt = output_mask[1] ? grad_target.mutable_data_ptr<scalar_t>() : nullptr;
    at::parallel_for(0, num_boxes, kBoxesPerChunk, [&](int64_t begin, int64_t end) {
      for_each_run(mode, valid, counts, slots, begin, end, [&](int64_t b, int64_t e, auto rule) {
        backward_run<scalar_t>(p, t, g_box, g_scale, gp, gt, b, e, static_cast<T>(eps), rule);
      });
    });
  });
  return {grad_pred, grad_target};
}

}  // namespace
}  // namespace giou
}  // namespace synclint

TORCH_LIBRARY_IMPL(synclint, CPU, m) {
  m.impl("giou_loss_forward", &synclint::giou::giou_loss_forward_cpu);
  m.impl("giou_loss_backward", &synclint::giou::giou_loss_backward_cpu);
}
