// CPU kernels of synclint::giou_loss_forward / giou_loss_backward.
//
// The op schemas live in Python (synclint/ops/_library.py) next to their fake
// implementations and autograd formula; this file only registers CPU kernels.
// Each kernel is one pass over the boxes: at::parallel_for over fixed-size
// chunks of tiles, each tile processed by loops the compiler vectorises.
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

// The loops work on tiles of kTile boxes held as structure-of-arrays in float
// (double for float64). Every stage is a simple loop GCC vectorises: a 4-wide
// deinterleave that also widens fp16/bf16, the presence test, the branch-free
// per-box math over the full tile, and the write-back.
constexpr int64_t kTile = 64;

template <typename T>
struct Tile {
  T raw_p[4][kTile] = {};  // as loaded
  T raw_t[4][kTile] = {};
  T p[4][kTile] = {};  // what the math sees: a unit box in absent slots
  T t[4][kTile] = {};
  T present[kTile] = {};  // 1 or 0: a float mask vectorises where bool does not
};

// Validity rules: fill tile.present[0, n) for boxes [begin, begin + n). The
// rule is a template parameter of the loops: no per-box branch on the mode.
struct PaddingRule {
  template <typename T>
  void fill(int64_t, int64_t n, Tile<T>& tile) const {
    for (int64_t j = 0; j < n; ++j) {
      tile.present[j] =
          is_padding(tile.raw_t[0][j], tile.raw_t[1][j], tile.raw_t[2][j], tile.raw_t[3][j])
              ? T(0)
              : T(1);
    }
  }
};

struct MaskRule {
  const bool* mask;
  template <typename T>
  void fill(int64_t begin, int64_t n, Tile<T>& tile) const {
    for (int64_t j = 0; j < n; ++j) tile.present[j] = mask[begin + j] ? T(1) : T(0);
  }
};

// counts[b] present boxes at the start of image b (negative: none).
struct CountsRule {
  const int64_t* counts;
  int64_t slots;
  template <typename T>
  void fill(int64_t begin, int64_t n, Tile<T>& tile) const {
    // One vectorisable loop per image the tile touches; no division per box.
    for (int64_t j0 = 0; j0 < n;) {
      const int64_t image = (begin + j0) / slots;
      const int64_t slot0 = (begin + j0) - image * slots;
      const int64_t j1 = std::min(n, j0 + slots - slot0);
      const int64_t present_end = j0 + counts[image] - slot0;  // tile index
      for (int64_t j = j0; j < j1; ++j) tile.present[j] = j < present_end ? T(1) : T(0);
      j0 = j1;
    }
  }
};

// Calls fn(rule) with the rule for `mode`.
template <typename Fn>
void with_rule(ValidityMode mode, const at::Tensor& valid, const at::Tensor& counts,
               int64_t slots, Fn&& fn) {
  switch (mode) {
    case ValidityMode::Padding:
      fn(PaddingRule{});
      return;
    case ValidityMode::Mask:
      fn(MaskRule{valid.const_data_ptr<bool>()});
      return;
    case ValidityMode::Counts:
      fn(CountsRule{counts.const_data_ptr<int64_t>(), slots});
      return;
  }
}

// Loads boxes [begin, begin + n) into the tile; slots n..kTile are absent.
template <typename scalar_t, typename T, typename Rule>
inline void load_tile(const scalar_t* __restrict__ pred, const scalar_t* __restrict__ target,
                      int64_t begin, int64_t n, const Rule& rule, Tile<T>& tile) {
  const scalar_t* __restrict__ p = pred + 4 * begin;
  const scalar_t* __restrict__ t = target + 4 * begin;
  for (int64_t j = 0; j < n; ++j) {
    for (int k = 0; k < 4; ++k) {
      tile.raw_p[k][j] = static_cast<T>(p[4 * j + k]);
      tile.raw_t[k][j] = static_cast<T>(t[4 * j + k]);
    }
  }
  rule.fill(begin, n, tile);
  for (int64_t j = n; j < kTile; ++j) tile.present[j] = T(0);
  // Absent slots compute on a unit box instead of their real (or stale)
  // coordinates: their discarded math stays finite, so a zero upstream
  // gradient gives exact zeros (no inf * 0 = NaN). Separate source and
  // destination arrays keep this a blend (in place, GCC emits masked stores,
  // which are slow on some CPUs).
  for (int k = 0; k < 4; ++k) {
    const T unit = k < 2 ? T(0) : T(1);
    for (int64_t j = 0; j < kTile; ++j) {
      tile.p[k][j] = tile.present[j] != T(0) ? tile.raw_p[k][j] : unit;
      tile.t[k][j] = tile.present[j] != T(0) ? tile.raw_t[k][j] : unit;
    }
  }
}

// Compiled twice on x86-64 Linux/GCC (AVX2+FMA and baseline), picked at load
// time, so one cached binary is both portable and fast.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define SYNCLINT_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SYNCLINT_MULTIVERSION
#endif

struct Partial {
  double loss_sum = 0.0;
  int64_t num_valid = 0;
};

// Loss over boxes [begin, end): their sum and count and, when `per_box` is
// non-null (reduction="none"), each box's loss.
template <typename scalar_t, typename Rule>
SYNCLINT_MULTIVERSION Partial forward_run(const scalar_t* __restrict__ pred,
                                          const scalar_t* __restrict__ target,
                                          scalar_t* __restrict__ per_box, int64_t begin,
                                          int64_t end, at::opmath_type<scalar_t> eps,
                                          Rule rule) {
  using T = at::opmath_type<scalar_t>;
  Tile<T> tile;
  T loss[kTile];
  T sum = 0;
  T count = 0;  // exact: a run is far below 2^24 boxes
  for (int64_t tile_begin = begin; tile_begin < end; tile_begin += kTile) {
    const int64_t n = std::min(kTile, end - tile_begin);
    load_tile(pred, target, tile_begin, n, rule, tile);
#pragma omp simd reduction(+ : sum, count)
    for (int64_t j = 0; j < kTile; ++j) {
      const T box = box_loss(tile.p[0][j], tile.p[1][j], tile.p[2][j], tile.p[3][j],
                             tile.t[0][j], tile.t[1][j], tile.t[2][j], tile.t[3][j], eps);
      loss[j] = tile.present[j] != T(0) ? box : T(0);
      sum += loss[j];
      count += tile.present[j];
    }
    if (per_box != nullptr) {
      for (int64_t j = 0; j < n; ++j) per_box[tile_begin + j] = static_cast<scalar_t>(loss[j]);
    }
  }
  return {static_cast<double>(sum), static_cast<int64_t>(count)};
}

template <typename scalar_t, typename Rule>
SYNCLINT_MULTIVERSION void backward_run(const scalar_t* __restrict__ pred,
                                        const scalar_t* __restrict__ target,
                                        const scalar_t* __restrict__ grad_per_box,
                                        at::opmath_type<scalar_t> grad_scale,
                                        scalar_t* __restrict__ grad_pred,
                                        scalar_t* __restrict__ grad_target, int64_t begin,
                                        int64_t end, at::opmath_type<scalar_t> eps, Rule rule) {
  using T = at::opmath_type<scalar_t>;
  Tile<T> tile;
  T g[kTile];
  T d_pred[4][kTile];
  T d_target[4][kTile];
  for (int64_t tile_begin = begin; tile_begin < end; tile_begin += kTile) {
    const int64_t n = std::min(kTile, end - tile_begin);
    load_tile(pred, target, tile_begin, n, rule, tile);
    // Upstream gradient per box, 0 for absent slots.
    if (grad_per_box == nullptr) {
      for (int64_t j = 0; j < kTile; ++j) g[j] = tile.present[j] != T(0) ? grad_scale : T(0);
    } else {
      for (int64_t j = 0; j < n; ++j) g[j] = static_cast<T>(grad_per_box[tile_begin + j]);
      for (int64_t j = n; j < kTile; ++j) g[j] = T(0);
      for (int64_t j = 0; j < kTile; ++j) g[j] = tile.present[j] != T(0) ? g[j] : T(0);
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
      scalar_t* __restrict__ out = grad_pred + 4 * tile_begin;
      for (int64_t j = 0; j < n; ++j)
        for (int k = 0; k < 4; ++k) out[4 * j + k] = static_cast<scalar_t>(d_pred[k][j]);
    }
    if (grad_target != nullptr) {
      scalar_t* __restrict__ out = grad_target + 4 * tile_begin;
      for (int64_t j = 0; j < n; ++j)
        for (int k = 0; k < 4; ++k) out[4 * j + k] = static_cast<scalar_t>(d_target[k][j]);
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
        with_rule(mode, valid, counts, slots, [&](auto rule) {
          partials[chunk] = forward_run<scalar_t>(p, t, out, begin, end, static_cast<T>(eps), rule);
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
        g_scale /= static_cast<T>(std::max<int64_t>(*num_valid.const_data_ptr<int64_t>(), 1));
      }
    }
    scalar_t* gp = output_mask[0] ? grad_pred.mutable_data_ptr<scalar_t>() : nullptr;
    scalar_t* gt = output_mask[1] ? grad_target.mutable_data_ptr<scalar_t>() : nullptr;
    at::parallel_for(0, num_boxes, kBoxesPerChunk, [&](int64_t begin, int64_t end) {
      with_rule(mode, valid, counts, slots, [&](auto rule) {
        backward_run<scalar_t>(p, t, g_box, g_scale, gp, gt, begin, end, static_cast<T>(eps), rule);
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
