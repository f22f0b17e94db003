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

// The inner loops work on tiles of kTile boxes held as structure-of-arrays in
// float (double for float64): one loop deinterleaves and widens the (x1, y1,
// x2, y2) rows, one does the branch-free math, one writes back. Fixed trip
// counts and no control flow let the compiler vectorise the math loop; a
// short last tile is padded with absent unit boxes.
constexpr int64_t kTile = 64;

template <typename T>
struct Tile {
  T p[4][kTile];
  T t[4][kTile];
  bool present[kTile];
};

// Compiled twice on x86-64 Linux/GCC (AVX2+FMA and baseline), picked at load
// time, so one cached binary is both portable and fast.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define SYNCLINT_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SYNCLINT_MULTIVERSION
#endif

// Absent slots (and the padding of a short last tile) are replaced by a unit
// box, so their discarded math is always finite and a zero upstream gradient
// gives them exact zeros: no inf * 0 = NaN.
template <typename scalar_t, typename T, typename Rule>
inline void load_tile(const scalar_t* __restrict__ pred, const scalar_t* __restrict__ target,
                      int64_t begin, int64_t n, Rule is_valid, Tile<T>& tile) {
  constexpr T kUnitBox[4] = {T(0), T(0), T(1), T(1)};
  for (int64_t j = 0; j < kTile; ++j) {
    const int64_t i = begin + j;
    bool present = false;
    if (j < n) {
      const scalar_t* t = target + 4 * i;
      present = is_valid(i, static_cast<T>(t[0]), static_cast<T>(t[1]), static_cast<T>(t[2]),
                         static_cast<T>(t[3]));
    }
    tile.present[j] = present;
    for (int k = 0; k < 4; ++k) {
      tile.p[k][j] = present ? static_cast<T>(pred[4 * i + k]) : kUnitBox[k];
      tile.t[k][j] = present ? static_cast<T>(target[4 * i + k]) : kUnitBox[k];
    }
  }
}

// Loss over boxes [begin, end): returns the run's sum and count and, when
// `per_box` is non-null (reduction="none"), stores each box's loss.
template <typename scalar_t, typename Rule>
SYNCLINT_MULTIVERSION Partial forward_run(const scalar_t* __restrict__ pred,
                                          const scalar_t* __restrict__ target,
                                          scalar_t* __restrict__ per_box, int64_t begin,
                                          int64_t end, at::opmath_type<scalar_t> eps,
                                          Rule is_valid) {
  using T = at::opmath_type<scalar_t>;
  Tile<T> tile;
  T loss[kTile];
  T sum = 0;
  int64_t count = 0;
  for (int64_t tile_begin = begin; tile_begin < end; tile_begin += kTile) {
    const int64_t n = std::min(kTile, end - tile_begin);
    load_tile(pred, target, tile_begin, n, is_valid, tile);
#pragma omp simd reduction(+ : sum, count)
    for (int64_t j = 0; j < kTile; ++j) {
      loss[j] = tile.present[j]
                    ? box_loss(tile.p[0][j], tile.p[1][j], tile.p[2][j], tile.p[3][j],
                               tile.t[0][j], tile.t[1][j], tile.t[2][j], tile.t[3][j], eps)
                    : T(0);
      sum += loss[j];
      count += tile.present[j] ? 1 : 0;
    }
    if (per_box != nullptr) {
      for (int64_t j = 0; j < n; ++j) per_box[tile_begin + j] = static_cast<scalar_t>(loss[j]);
    }
  }
  return {static_cast<double>(sum), count};
}

template <typename scalar_t, typename Rule>
SYNCLINT_MULTIVERSION void backward_run(const scalar_t* __restrict__ pred,
                                        const scalar_t* __restrict__ target,
                                        const scalar_t* __restrict__ grad_per_box,
                                        at::opmath_type<scalar_t> grad_scale,
                                        scalar_t* __restrict__ grad_pred,
                                        scalar_t* __restrict__ grad_target, int64_t begin,
                                        int64_t end, at::opmath_type<scalar_t> eps, Rule is_valid) {
  using T = at::opmath_type<scalar_t>;
  Tile<T> tile;
  T g[kTile];
  T d_pred[4][kTile];
  T d_target[4][kTile];
  for (int64_t tile_begin = begin; tile_begin < end; tile_begin += kTile) {
    const int64_t n = std::min(kTile, end - tile_begin);
    load_tile(pred, target, tile_begin, n, is_valid, tile);
    // Upstream gradient per box; absent slots get 0 (their math is finite).
    for (int64_t j = 0; j < kTile; ++j) {
      if (!tile.present[j]) {
        g[j] = T(0);
      } else {
        g[j] = grad_per_box == nullptr ? grad_scale : static_cast<T>(grad_per_box[tile_begin + j]);
      }
    }
#pragma omp simd
    for (int64_t j = 0; j < kTile; ++j) {
      const BoxGrads<T> d =
          box_loss_backward(tile.p[0][j], tile.p[1][j], tile.p[2][j], tile.p[3][j],
                            tile.t[0][j], tile.t[1][j], tile.t[2][j], tile.t[3][j], eps, g[j]);
      d_pred[0][j] = d.p[0];
      d_pred[1][j] = d.p[1];
      d_pred[2][j] = d.p[2];
      d_pred[3][j] = d.p[3];
      d_target[0][j] = d.t[0];
      d_target[1][j] = d.t[1];
      d_target[2][j] = d.t[2];
      d_target[3][j] = d.t[3];
    }
    if (grad_pred != nullptr) {
      for (int64_t j = 0; j < n; ++j)
        for (int k = 0; k < 4; ++k)
          grad_pred[4 * (tile_begin + j) + k] = static_cast<scalar_t>(d_pred[k][j]);
    }
    if (grad_target != nullptr) {
      for (int64_t j = 0; j < n; ++j)
        for (int k = 0; k < 4; ++k)
          grad_target[4 * (tile_begin + j) + k] = static_cast<scalar_t>(d_target[k][j]);
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
