// CPU kernels of synclint::giou_loss_forward / giou_loss_backward and of the
// eager path's giou_loss_forward_grad / giou_loss_scale_grad_.
//
// The op schemas live in Python (synclint/ops/_library.py) next to their fake
// implementations and autograd formula; this file only registers CPU kernels.
// Each kernel is one pass over the boxes (the fused forward of a "mean"
// counts the present boxes first): torch's intra-op threads (OpenMP, when the
// build has it) each take a contiguous share of the work items (whole images
// or image slices) and then help with the others' leftovers; each item is
// processed in tiles by loops the compiler vectorises. With `counts` or
// a `valid` mask, absent slots are skipped without reading their boxes.
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/util/accumulate.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "giou.h"
#include "giou_host.h"

namespace synclint {
namespace giou {
namespace {

// The loops work on tiles of kTile boxes held as structure-of-arrays in float
// (double for float64). Every stage is a simple loop GCC vectorises: the
// presence test, a 4-wide deinterleave that also widens fp16/bf16, a unit
// box written into the absent slots (tiles that are not full only), the
// branch-free per-box math over the tile's present range, and the write-back.
constexpr int64_t kTile = 64;

// Everything a kernel loop calls is forced inline into the multiversioned
// item functions (below): compiled on its own, it would get the baseline
// target only (SSE2 on x86-64), not the AVX2 clone's.
#if defined(_MSC_VER)
#define SYNCLINT_INLINE __forceinline
#else
#define SYNCLINT_INLINE inline __attribute__((always_inline))
#endif

template <typename T>
struct Tile {
  T raw_p[4][kTile] = {};  // as loaded, the unit box in absent slots (see unit_box_if_absent)
  T raw_t[4][kTile] = {};
  T present[kTile] = {};  // 1 or 0: a float mask vectorises where bool does not
  // Loss sum and present count per slot lane, over a whole work item: one
  // vector add per vector of boxes. (An `omp simd` reduction per tile ends in
  // a scalar, in-order sum of the vector's lanes: two 16-add dependency
  // chains per 64 boxes.) Exact counts: a lane sees far below 2^24 boxes.
  T loss_lanes[kTile] = {};
  T count_lanes[kTile] = {};
};

// What the math sees in slot j: the loaded boxes, or a unit box where the
// slot is absent. Absent slots compute on the unit box instead of their real
// (or stale) coordinates: their discarded math stays finite, so a zero
// upstream gradient gives exact zeros (no inf * 0 = NaN).
template <typename T>
struct BoxPair {
  T p[4];
  T t[4];
};

template <typename T>
SYNCLINT_INLINE BoxPair<T> tile_box(const Tile<T>& tile, int64_t j) {
  BoxPair<T> box;
  for (int k = 0; k < 4; ++k) {
    box.p[k] = tile.raw_p[k][j];
    box.t[k] = tile.raw_t[k][j];
  }
  return box;
}

// Puts the unit box in every absent slot of [0, m), in place, unless every
// slot there is present (the dense case: nothing to do). A select inside the
// math loop instead cost 10-14% of the dense gradient kernel (it ran on every
// tile), and a blend pass into more tile arrays about 10% of the dense
// kernels; this pass runs on partly filled tiles only.
template <typename T>
SYNCLINT_INLINE void unit_box_if_absent(Tile<T>& tile, int64_t m) {
  T present = 0;
#pragma omp simd reduction(+ : present)
  for (int64_t j = 0; j < m; ++j) present += tile.present[j];
  if (present == static_cast<T>(m)) return;
  for (int k = 0; k < 4; ++k) {
    const T unit = k < 2 ? T(0) : T(1);
    for (int64_t j = 0; j < m; ++j) {
      tile.raw_p[k][j] = tile.present[j] != T(0) ? tile.raw_p[k][j] : unit;
      tile.raw_t[k][j] = tile.present[j] != T(0) ? tile.raw_t[k][j] : unit;
    }
  }
}

// ---------------------------------------------------------------- work split
//
// The boxes are `rows` images of `slots` boxes each. The work is cut into
// items of about kBoxesPerChunk boxes, independently of the thread count:
// several whole images per item when images are small, slices of one image
// when they are large. Forward partial sums are kept per item and added in
// item order, so the result is the same on any number of threads.
struct Grid {
  int64_t rows;
  int64_t slots;
  int64_t rows_per_item;    // images per item (slots < kBoxesPerChunk)
  int64_t items_per_row;    // slices per image (slots >= kBoxesPerChunk)
  int64_t num_items;

  Grid(int64_t rows_, int64_t slots_) : rows(rows_), slots(slots_) {
    if (slots >= kBoxesPerChunk) {
      rows_per_item = 1;
      items_per_row = (slots + kBoxesPerChunk - 1) / kBoxesPerChunk;
      num_items = rows * items_per_row;
    } else {
      rows_per_item = std::max<int64_t>(1, kBoxesPerChunk / std::max<int64_t>(slots, 1));
      items_per_row = 1;
      num_items = (rows + rows_per_item - 1) / rows_per_item;
    }
  }

  // Item i covers slots [slot_begin, slot_end) of images [row_begin, row_end).
  struct Span {
    int64_t row_begin, row_end, slot_begin, slot_end;
    int64_t boxes() const { return (row_end - row_begin) * (slot_end - slot_begin); }
  };
  Span span(int64_t i) const {
    if (items_per_row > 1) {
      const int64_t begin = (i % items_per_row) * kBoxesPerChunk;
      return {i / items_per_row, i / items_per_row + 1, begin, std::min(slots, begin + kBoxesPerChunk)};
    }
    return {i * rows_per_item, std::min(rows, (i + 1) * rows_per_item), 0, slots};
  }
};

// ------------------------------------------------------------ validity rules
//
// A rule says which slots hold a box. `end(row, begin, end)` trims a segment
// to the part that may hold boxes (the slots after it are absent and never
// read); `fill(flat_begin, n, target, tile)` sets tile.present[0, n) for the
// boxes [flat_begin, flat_begin + n); `count(flat_begin, n, target)` counts
// the present ones without loading a tile. The rule is a template parameter
// of the loops: no per-box branch on the mode.

// Deinterleaves (and widens) boxes [lo, hi) of a tile: a loop GCC vectorises.
template <typename scalar_t, typename T>
SYNCLINT_INLINE void deinterleave(const scalar_t* __restrict__ boxes, int64_t lo, int64_t hi,
                         T (&out)[4][kTile]) {
  for (int64_t j = lo; j < hi; ++j) {
    for (int k = 0; k < 4; ++k) out[k][j] = static_cast<T>(boxes[4 * j + k]);
  }
}

// The default: a target row of four zeros is padding. The targets must be
// read to know, so this rule loads them into the tile (kLoadsTargets).
struct PaddingRule {
  static constexpr bool kLoadsTargets = true;
  static constexpr bool kCountsFromMetadata = false;
  int64_t end(int64_t, int64_t, int64_t slot_end) const { return slot_end; }
  template <typename scalar_t>
  SYNCLINT_INLINE int64_t count(int64_t begin, int64_t n, const scalar_t* __restrict__ target) const {
    using T = at::opmath_type<scalar_t>;
    const scalar_t* __restrict__ t = target + 4 * begin;
    int64_t present = 0;
#pragma omp simd reduction(+ : present)
    for (int64_t j = 0; j < n; ++j) {
      present += is_padding(static_cast<T>(t[4 * j]), static_cast<T>(t[4 * j + 1]), static_cast<T>(t[4 * j + 2]),
                            static_cast<T>(t[4 * j + 3]))
                     ? 0
                     : 1;
    }
    return present;
  }
  template <typename scalar_t, typename T>
  SYNCLINT_INLINE void fill(int64_t begin, int64_t n, const scalar_t* __restrict__ target, Tile<T>& tile) const {
    deinterleave(target + 4 * begin, 0, n, tile.raw_t);
    for (int64_t j = 0; j < n; ++j) {
      tile.present[j] =
          is_padding(tile.raw_t[0][j], tile.raw_t[1][j], tile.raw_t[2][j], tile.raw_t[3][j]) ? T(0) : T(1);
    }
  }
};

// An explicit bool mask: only boxes in a tile's present range are read.
struct MaskRule {
  static constexpr bool kLoadsTargets = false;
  static constexpr bool kCountsFromMetadata = false;
  const bool* mask;
  int64_t end(int64_t, int64_t, int64_t slot_end) const { return slot_end; }
  template <typename scalar_t>
  SYNCLINT_INLINE int64_t count(int64_t begin, int64_t n, const scalar_t*) const {
    int64_t present = 0;
#pragma omp simd reduction(+ : present)
    for (int64_t j = 0; j < n; ++j) present += mask[begin + j] ? 1 : 0;
    return present;
  }
  template <typename scalar_t, typename T>
  SYNCLINT_INLINE void fill(int64_t begin, int64_t n, const scalar_t*, Tile<T>& tile) const {
    for (int64_t j = 0; j < n; ++j) tile.present[j] = mask[begin + j] ? T(1) : T(0);
  }
};

// counts[row] boxes at the start of each image (negative: none; any int64,
// clamped before any arithmetic, so 2**63 - 1 means "all slots"). The slots
// after the count are never read.
struct CountsRule {
  static constexpr bool kLoadsTargets = false;
  static constexpr bool kCountsFromMetadata = true;  // one clamp per image, no box or mask read
  const int64_t* counts;
  int64_t slots;
  int64_t end(int64_t row, int64_t slot_begin, int64_t slot_end) const {
    const int64_t count = std::min(std::max<int64_t>(counts[row], 0), slots);
    return std::max(slot_begin, std::min(slot_end, count));
  }
  template <typename scalar_t>
  SYNCLINT_INLINE int64_t count(int64_t, int64_t n, const scalar_t*) const { return n; }  // `end` trimmed
  template <typename scalar_t, typename T>
  SYNCLINT_INLINE void fill(int64_t, int64_t n, const scalar_t*, Tile<T>& tile) const {
    for (int64_t j = 0; j < n; ++j) tile.present[j] = T(1);  // `end` already trimmed
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

// Fills the tile's presence for boxes [begin, begin + n) (slots n..kTile
// absent) and returns the range [lo, hi) of present slots (lo == hi: none).
template <typename scalar_t, typename T, typename Rule>
SYNCLINT_INLINE std::pair<int64_t, int64_t> tile_presence(const scalar_t* __restrict__ target, int64_t begin,
                                                 int64_t n, const Rule& rule, Tile<T>& tile) {
  rule.fill(begin, n, target, tile);
  for (int64_t j = n; j < kTile; ++j) tile.present[j] = T(0);
  int64_t lo = 0, hi = n;
  while (lo < hi && tile.present[lo] == T(0)) ++lo;
  while (hi > lo && tile.present[hi - 1] == T(0)) --hi;
  return {lo, hi};
}

// The math runs on slots [0, m): the present range rounded up to a whole
// number of vectors (16 floats: an AVX-512 register, two AVX2 ones), so a
// tile holding 3 boxes costs one vector, not four.
SYNCLINT_INLINE int64_t math_extent(int64_t hi) {
  constexpr int64_t kVector = 16;
  return std::min(kTile, (hi + kVector - 1) / kVector * kVector);
}

// Loads boxes [begin + lo, begin + hi) into the tile (the slots outside keep
// a previous tile's values until unit_box_if_absent overwrites them).
template <typename scalar_t, typename T, typename Rule>
SYNCLINT_INLINE void load_tile(const scalar_t* __restrict__ pred, const scalar_t* __restrict__ target,
                               int64_t begin, int64_t lo, int64_t hi, const Rule&, Tile<T>& tile) {
  deinterleave(pred + 4 * begin, lo, hi, tile.raw_p);
  if (!Rule::kLoadsTargets) deinterleave(target + 4 * begin, lo, hi, tile.raw_t);
}

// Compiled twice on x86-64 Linux/GCC (AVX2+FMA and baseline), picked at load
// time, so one cached binary is both portable and fast.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define SYNCLINT_MULTIVERSION \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SYNCLINT_MULTIVERSION
#endif

struct Partial {
  double loss_sum = 0.0;
  int64_t num_valid = 0;
};

// An item's loss sum and count from its tile's lanes, added in lane order.
template <typename T>
SYNCLINT_INLINE Partial lanes_total(const Tile<T>& tile) {
  Partial part;
  for (int64_t j = 0; j < kTile; ++j) {
    part.loss_sum += static_cast<double>(tile.loss_lanes[j]);
    part.num_valid += static_cast<int64_t>(tile.count_lanes[j]);
  }
  return part;
}

// Loss over slots [slot_begin, slot_end) of image `row`, added to the
// tile's lanes, and, when `per_box` is non-null (reduction="none"), each
// slot's loss.
template <typename scalar_t, typename T, typename Rule>
SYNCLINT_INLINE void forward_segment(const scalar_t* __restrict__ pred, const scalar_t* __restrict__ target,
                                     scalar_t* __restrict__ per_box, int64_t slots, int64_t row,
                                     int64_t slot_begin, int64_t slot_end, T eps, const Rule& rule,
                                     Tile<T>& tile) {
  T loss[kTile];
  const int64_t base = row * slots;
  const int64_t read_end = rule.end(row, slot_begin, slot_end);
  for (int64_t tile_begin = slot_begin; tile_begin < read_end; tile_begin += kTile) {
    const int64_t n = std::min(kTile, read_end - tile_begin);
    const auto [lo, hi] = tile_presence(target, base + tile_begin, n, rule, tile);
    if (lo == hi) {  // nothing present: nothing to read
      if (per_box != nullptr) std::fill_n(per_box + base + tile_begin, n, scalar_t(0));
      continue;
    }
    const int64_t m = math_extent(hi);
    load_tile(pred, target, base + tile_begin, lo, hi, rule, tile);
    unit_box_if_absent(tile, m);
#pragma omp simd
    for (int64_t j = 0; j < m; ++j) {
      const BoxPair<T> b = tile_box(tile, j);
      const T box = box_loss(b.p[0], b.p[1], b.p[2], b.p[3], b.t[0], b.t[1], b.t[2], b.t[3], eps);
      loss[j] = tile.present[j] != T(0) ? box : T(0);
      tile.loss_lanes[j] += loss[j];
      tile.count_lanes[j] += tile.present[j];
    }
    if (per_box != nullptr) {
      scalar_t* __restrict__ out = per_box + base + tile_begin;
      for (int64_t j = 0; j < std::min(n, m); ++j) out[j] = static_cast<scalar_t>(loss[j]);
      for (int64_t j = m; j < n; ++j) out[j] = scalar_t(0);
    }
  }
  if (per_box != nullptr) std::fill(per_box + base + read_end, per_box + base + slot_end, scalar_t(0));
}

template <typename out_t>
SYNCLINT_INLINE void zero_boxes(out_t* out, int64_t begin, int64_t end) {
  if (out != nullptr && end > begin) std::fill(out + 4 * begin, out + 4 * end, out_t(0));
}

// Gradients of slots [slot_begin, slot_end) of image `row` (zeros for absent
// slots) into grad_pred / grad_target (either may be null). The upstream
// gradient per box is grad_per_box[i] (reduction="none") or, when that is
// null, grad_scale (always, with kWithLoss). With kWithLoss it also adds the
// losses to the tile's lanes: the fused forward (giou_loss_forward_grad)
// computes loss and gradient from one load of the boxes and one set of
// intermediates. Without kTargets (grad_target must be null) the target
// gradient's math and stores are compiled out: the fused forward's common
// case, a prediction-only gradient. (The backward keeps one instantiation,
// kTargets, and tests grad_target at run time: twice the instantiations of
// this, the largest function, cost half again the first build's time.)
template <bool kWithLoss, bool kTargets, typename scalar_t, typename out_t, typename T, typename Rule>
SYNCLINT_INLINE void gradient_segment(const scalar_t* __restrict__ pred, const scalar_t* __restrict__ target,
                                         const scalar_t* __restrict__ grad_per_box, T grad_scale,
                                         out_t* __restrict__ grad_pred, out_t* __restrict__ grad_target,
                                         int64_t slots, int64_t row, int64_t slot_begin, int64_t slot_end,
                                         T eps, const Rule& rule, Tile<T>& tile) {
  T g[kTile];
  T d_pred[4][kTile];
  T d_target[4][kTile];
  const int64_t base = row * slots;
  const int64_t read_end = rule.end(row, slot_begin, slot_end);
  for (int64_t tile_begin = slot_begin; tile_begin < read_end; tile_begin += kTile) {
    const int64_t n = std::min(kTile, read_end - tile_begin);
    const int64_t first = base + tile_begin;
    const auto [lo, hi] = tile_presence(target, first, n, rule, tile);
    if (lo == hi) {  // nothing present: zero gradients, nothing to read
      zero_boxes(grad_pred, first, first + n);
      zero_boxes(grad_target, first, first + n);
      continue;
    }
    const int64_t m = math_extent(hi);
    load_tile(pred, target, first, lo, hi, rule, tile);
    unit_box_if_absent(tile, m);
    // Upstream gradient per box, 0 for absent slots. (The fused forward's is
    // always grad_scale: taken inside the math loop, no pass of its own.)
    if (!kWithLoss && grad_per_box == nullptr) {
      for (int64_t j = 0; j < m; ++j) g[j] = tile.present[j] != T(0) ? grad_scale : T(0);
    } else if (!kWithLoss) {
      for (int64_t j = 0; j < m; ++j) g[j] = T(0);
      for (int64_t j = lo; j < hi; ++j) g[j] = static_cast<T>(grad_per_box[first + j]);
      for (int64_t j = 0; j < m; ++j) g[j] = tile.present[j] != T(0) ? g[j] : T(0);
    }
#pragma omp simd
    for (int64_t j = 0; j < m; ++j) {
      const BoxPair<T> b = tile_box(tile, j);
      const T g_box = kWithLoss ? tile.present[j] * grad_scale : g[j];  // present is 1 or 0
      const BoxGrads<T> d =
          box_loss_backward(b.p[0], b.p[1], b.p[2], b.p[3], b.t[0], b.t[1], b.t[2], b.t[3], eps, g_box);
      d_pred[0][j] = d.p[0];
      d_pred[1][j] = d.p[1];
      d_pred[2][j] = d.p[2];
      d_pred[3][j] = d.p[3];
      if constexpr (kTargets) {
        d_target[0][j] = d.t[0];
        d_target[1][j] = d.t[1];
        d_target[2][j] = d.t[2];
        d_target[3][j] = d.t[3];
      }
      if constexpr (kWithLoss) {
        tile.loss_lanes[j] += tile.present[j] != T(0) ? d.loss : T(0);
        tile.count_lanes[j] += tile.present[j];
      }
    }
    const int64_t computed = std::min(n, m);  // slots [m, n) are absent: zeros
    if (grad_pred != nullptr) {
      out_t* __restrict__ out = grad_pred + 4 * first;
      for (int64_t j = 0; j < computed; ++j)
        for (int k = 0; k < 4; ++k) out[4 * j + k] = static_cast<out_t>(d_pred[k][j]);
    }
    if (kTargets && grad_target != nullptr) {
      out_t* __restrict__ out = grad_target + 4 * first;
      for (int64_t j = 0; j < computed; ++j)
        for (int k = 0; k < 4; ++k) out[4 * j + k] = static_cast<out_t>(d_target[k][j]);
    }
    zero_boxes(grad_pred, first + computed, first + n);
    zero_boxes(grad_target, first + computed, first + n);
  }
  // Slots after the count: zero gradients, boxes never read.
  zero_boxes(grad_pred, base + read_end, base + slot_end);
  zero_boxes(grad_target, base + read_end, base + slot_end);
}

// One work item (the unit of the thread split): its segments share one tile.
template <typename scalar_t, typename Rule>
SYNCLINT_MULTIVERSION Partial forward_item(const scalar_t* __restrict__ pred,
                                           const scalar_t* __restrict__ target,
                                           scalar_t* __restrict__ per_box, const Grid& grid,
                                           int64_t item, at::opmath_type<scalar_t> eps, Rule rule) {
  using T = at::opmath_type<scalar_t>;
  // A plain loop, no lambda: a lambda's body would be compiled for the
  // baseline target, outside this function's AVX2 clone.
  Tile<T> tile;
  const Grid::Span span = grid.span(item);
  for (int64_t row = span.row_begin; row < span.row_end; ++row) {
    forward_segment<scalar_t, T>(pred, target, per_box, grid.slots, row, span.slot_begin, span.slot_end, eps,
                                 rule, tile);
  }
  return lanes_total(tile);
}

template <bool kWithLoss, bool kTargets, typename scalar_t, typename out_t, typename Rule>
SYNCLINT_MULTIVERSION Partial gradient_item(const scalar_t* __restrict__ pred,
                                            const scalar_t* __restrict__ target,
                                            const scalar_t* __restrict__ grad_per_box,
                                            at::opmath_type<scalar_t> grad_scale,
                                            out_t* __restrict__ grad_pred, out_t* __restrict__ grad_target,
                                            const Grid& grid, int64_t item, at::opmath_type<scalar_t> eps,
                                            Rule rule) {
  using T = at::opmath_type<scalar_t>;
  Tile<T> tile;
  const Grid::Span span = grid.span(item);
  for (int64_t row = span.row_begin; row < span.row_end; ++row) {
    gradient_segment<kWithLoss, kTargets, scalar_t, out_t, T>(pred, target, grad_per_box, grad_scale, grad_pred,
                                                              grad_target, grid.slots, row, span.slot_begin,
                                                              span.slot_end, eps, rule, tile);
  }
  return lanes_total(tile);
}

// Present boxes of one work item, counted without the math: the divisor of
// "mean", needed before the fused forward writes its gradient.
template <typename scalar_t, typename Rule>
SYNCLINT_MULTIVERSION int64_t count_item(const scalar_t* __restrict__ target, const Grid& grid, int64_t item,
                                         Rule rule) {
  int64_t present = 0;
  const Grid::Span span = grid.span(item);
  for (int64_t row = span.row_begin; row < span.row_end; ++row) {
    const int64_t end = rule.end(row, span.slot_begin, span.slot_end);
    if (end > span.slot_begin) {
      present += rule.count(row * grid.slots + span.slot_begin, end - span.slot_begin, target);
    }
  }
  return present;
}

// Runs fn(item) for every item in [0, num_items) on torch's intra-op threads.
// Each thread starts on its own contiguous share of the items (worker w: the
// w-th of `workers` equal ranges), so from one call to the next a thread
// reads and writes the same part of the boxes and gradients and finds it in
// its own core's cache. When its share is done it takes the remaining items
// of the other shares, one at a time through their counters, so a thread the
// OS deschedules (a busy machine) or one that drew the dense images (counts)
// does not hold the others back. (A single shared counter, as before, handed
// each item to whichever thread came first: the lines an item writes were
// then often modified in the other core's cache, and the dense fused kernel
// took 13-15% more CPU time on 2 threads than on 1: it ran 1.71-1.77x faster
// on 2 threads, 1.89-1.97x now; dense, B = 1024, docs/giou.md.) Which thread
// ran an item never matters: results are per item.
template <typename Fn>
void for_each_item(int64_t num_items, const Fn& fn) {
  if (num_items <= 0) return;
  const int64_t workers = std::min<int64_t>(at::get_num_threads(), num_items);
  struct alignas(64) Share {  // a cache line each: the threads' counters never share one
    std::atomic<int64_t> next;
    int64_t end;
  };
  std::vector<Share> shares(workers);
  for (int64_t w = 0; w < workers; ++w) {
    shares[w].next.store(w * num_items / workers, std::memory_order_relaxed);
    shares[w].end = (w + 1) * num_items / workers;
  }
  at::parallel_for(0, workers, 1, [&](int64_t begin, int64_t end) {
    for (int64_t own = begin; own < end; ++own) {
      for (int64_t k = 0; k < workers; ++k) {  // its own share first, then the others' leftovers
        Share& share = shares[(own + k) % workers];
        for (int64_t item = share.next.fetch_add(1, std::memory_order_relaxed); item < share.end;
             item = share.next.fetch_add(1, std::memory_order_relaxed)) {
          fn(item);
        }
      }
    }
  });
}

// A box-sized tensor (a kernel output, or the contiguous copy of a strided
// input) whose storage is reused from one call to the next on the same
// thread once nothing references it any more.
//
// The eager path's gradient is a new box-sized tensor every training step
// (4 MiB for B = 1024, N = 256, fp32), freed when the step drops it
// (`.grad = None`, `zero_grad()`, or the head's backward consuming it).
// glibc serves a block that size from the top of its heap, and torch's CPU
// allocator asks for 64-byte alignment (posix_memalign), which needs a few
// bytes more than the hole the previous step's block left behind: so the
// heap grew by the block's size in most steps, first-touching 1024 fresh
// pages (a page fault each, the kernel zeroing them), and was trimmed back
// every few steps. Which steps paid depended on everything else the process
// had allocated: of 2000 dense fwd+bwd steps, 1% at 1 thread and 58% at 2
// threads in one process (those 0.77 ms slower in the median), 5-9% at 1
// thread in another (docs/giou.md).
//
// A permuted detection head (`head.view(B, 4, N).permute(0, 2, 1)`) or an
// expanded target cost one more such block per call, for its contiguous copy.
//
// The storage of the last tensor a buffer gave out on this thread is kept
// (a strong reference to the storage, not to the tensor, so autograd can
// still adopt a returned gradient as `.grad` without a copy). The next call
// writes into it when it holds the same number of bytes and nothing else
// references it: no tensor, storage or weak reference (a caller still holding
// the last gradient, a view of it or its storage gets a fresh tensor, as
// before), and only while the storage still holds the memory it was given (not
// after `share_memory_()` moved it in place to memory another process may map).
// Every element of these outputs is written by the kernels (and
// of a copy by the copy), so a reused storage gives the same result bit for
// bit. The cost: each output and each input copy keeps at most one buffer
// per calling thread alive after the caller dropped it, until the next call
// or the thread's exit.
class RecycledBuffer {
 public:
  // An uninitialised contiguous CPU tensor of `sizes`.
  at::Tensor empty(at::IntArrayRef sizes, const at::TensorOptions& options) {
    const size_t nbytes = static_cast<size_t>(c10::multiply_integers(sizes)) * options.dtype().itemsize();
    if (!reusable(nbytes)) {
      at::Tensor fresh = at::empty(sizes, options);
      last_ = c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(fresh.storage().unsafeGetStorageImpl());
      data_ = last_->data_ptr().get();
      deleter_ = last_->data_ptr().get_deleter();
      return fresh;
    }
    at::Tensor reused = at::detail::make_tensor<c10::TensorImpl>(
        c10::Storage(last_), c10::DispatchKeySet(options.computeDispatchKey()), options.dtype());
    reused.unsafeGetTensorImpl()->set_sizes_contiguous(sizes);
    return reused;
  }

 private:
  bool reusable(size_t nbytes) const {
    if (!last_ || last_->nbytes() != nbytes || nbytes == 0) return false;
    // This reference alone (the weak count is 1 while any strong one exists).
    if (last_.use_count() != 1 || last_.weak_use_count() != 1) return false;
    // Still the memory the allocator gave: a storage whose data was swapped in
    // place (into shared memory another process may map) is not ours to write.
    // (Python's `share_memory_()` also leaves a storage object holding a
    // reference, so the count above already refuses it; C++ callers may not.)
    if (last_->data_ptr().get() != data_ || last_->data_ptr().get_deleter() != deleter_) return false;
    // The caller's last reference may have been dropped on another thread
    // (a release decrement): order its last reads of the buffer before our writes.
    std::atomic_thread_fence(std::memory_order_acquire);
    return true;
  }

  c10::intrusive_ptr<c10::StorageImpl> last_;
  const void* data_ = nullptr;
  c10::DeleterFnPtr deleter_ = nullptr;
};

// `tensor` itself when contiguous, else its contiguous copy in `buffer`.
at::Tensor contiguous(const at::Tensor& tensor, RecycledBuffer& buffer) {
  if (tensor.is_contiguous()) return tensor;
  return buffer.empty(tensor.sizes(), tensor.options()).copy_(tensor);
}

// The inputs of one call, contiguous, with the grid of work items over them.
struct Boxes {
  ValidityMode mode;
  at::Tensor pred, target, valid, counts;
  Grid grid;

  Boxes(const at::Tensor& pred_in, const at::Tensor& target_in, const std::optional<at::Tensor>& valid_in,
        const std::optional<at::Tensor>& counts_in)
      : mode(check_inputs(pred_in, target_in, valid_in, counts_in)),
        pred(contiguous(pred_in, pred_copy())),
        target(contiguous(target_in, target_copy())),
        valid(valid_in.has_value() ? valid_in->contiguous() : at::Tensor()),
        counts(counts_in.has_value() ? counts_in->contiguous() : at::Tensor()),
        grid(images(pred_in), slots_per_image(pred_in)) {}

  // The copies live only during one kernel call: the next call on this
  // thread (of any of the kernels) finds them unreferenced.
  static RecycledBuffer& pred_copy() {
    thread_local RecycledBuffer buffer;
    return buffer;
  }
  static RecycledBuffer& target_copy() {
    thread_local RecycledBuffer buffer;
    return buffer;
  }

  static int64_t images(const at::Tensor& pred) {
    const int64_t slots = slots_per_image(pred);
    return slots > 0 ? pred.numel() / 4 / slots : 0;
  }
};

// The forward's outputs from its per-item partials, added in item order (the
// same answer for any thread count): (loss, num_valid).
std::tuple<at::Tensor, at::Tensor> finish_forward(const std::vector<Partial>& partials, Reduction reduction,
                                                  const at::Tensor& pred, const at::Tensor& per_box) {
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

std::tuple<at::Tensor, at::Tensor> giou_loss_forward_cpu(
    const at::Tensor& pred_in, const at::Tensor& target_in,
    const std::optional<at::Tensor>& valid_in, const std::optional<at::Tensor>& counts_in,
    c10::string_view reduction_name, double eps) {
  const Boxes in(pred_in, target_in, valid_in, counts_in);
  const Reduction reduction = parse_reduction(reduction_name);
  const auto box_shape = in.pred.sizes().slice(0, in.pred.dim() - 1);
  thread_local RecycledBuffer recycled_per_box;
  at::Tensor per_box =
      reduction == Reduction::None ? recycled_per_box.empty(box_shape, in.pred.options()) : at::Tensor();
  std::vector<Partial> partials(in.grid.num_items);

  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, in.pred.scalar_type(), "giou_loss_forward_cpu", [&] {
    using T = at::opmath_type<scalar_t>;
    const scalar_t* p = in.pred.const_data_ptr<scalar_t>();
    const scalar_t* t = in.target.const_data_ptr<scalar_t>();
    scalar_t* out = per_box.defined() ? per_box.mutable_data_ptr<scalar_t>() : nullptr;
    with_rule(in.mode, in.valid, in.counts, in.grid.slots, [&](auto rule) {
      for_each_item(in.grid.num_items, [&](int64_t item) {
        partials[item] = forward_item<scalar_t>(p, t, out, in.grid, item, static_cast<T>(eps), rule);
      });
    });
  });
  return finish_forward(partials, reduction, in.pred, per_box);
}

// Present boxes over all items, added in item order. With `counts` the total
// is one clamp per image: a parallel region would cost more than the count
// (waking the other threads and handing them items), so it runs on the calling
// thread.
template <typename scalar_t, typename Rule>
int64_t count_present(const scalar_t* target, const Grid& grid, const Rule& rule) {
  if constexpr (Rule::kCountsFromMetadata) {
    int64_t total = 0;
    for (int64_t item = 0; item < grid.num_items; ++item) total += count_item<scalar_t>(target, grid, item, rule);
    return total;
  }
  std::vector<int64_t> counts(grid.num_items);
  for_each_item(grid.num_items, [&](int64_t item) { counts[item] = count_item<scalar_t>(target, grid, item, rule); });
  int64_t total = 0;
  for (const int64_t count : counts) total += count;
  return total;
}

// The fused forward's pass over every item: each present box's upstream
// gradient is `scale`.
template <bool kTargets, typename scalar_t, typename Rule, typename T = at::opmath_type<scalar_t>>
void fused_pass(const scalar_t* p, const scalar_t* t, T scale, T* dp, T* dt, const Grid& grid, T eps,
                const Rule& rule, std::vector<Partial>& partials) {
  for_each_item(grid.num_items, [&](int64_t item) {
    partials[item] = gradient_item<true, kTargets, scalar_t, T>(p, t, nullptr, scale, dp, dt, grid, item, eps, rule);
  });
}

// The fused forward of "mean" under the padding rule, betting that every
// slot holds a box. The gradient must come out divided by the count of
// present boxes, and only the targets say which are present: counting them
// first is a whole extra pass over the targets (about a fifth of the dense
// kernel's time). When the first work item has no padding, the pass runs
// with the count the bet implies (every slot: the same scale, bit for bit,
// that counting first would give) and counts as it goes. The first item that
// finds padding loses the bet: the items started after it only count, and
// one more pass writes the right gradient. So a batch whose first item
// already holds padding (the usual padded batch) never bets and costs what it
// did; a dense batch saves the count pass; a batch whose first item is full
// and a later one is not pays up to one extra gradient pass. Returns the
// count of present boxes when the bet was made (every slot when it won: the
// gradient is then done), -1 when it was not.
template <bool kTargets, typename scalar_t, typename T = at::opmath_type<scalar_t>>
int64_t fused_pass_if_dense(const scalar_t* p, const scalar_t* t, T* dp, T* dt, const Grid& grid, T eps,
                         const PaddingRule& rule, std::vector<Partial>& partials) {
  if (grid.num_items == 0 || count_item<scalar_t>(t, grid, 0, rule) < grid.span(0).boxes()) return -1;
  const T scale = T(1) / static_cast<T>(grid.rows * grid.slots);
  std::atomic<bool> padding_seen{false};
  for_each_item(grid.num_items, [&](int64_t item) {
    if (padding_seen.load(std::memory_order_relaxed)) {
      partials[item] = Partial{0.0, count_item<scalar_t>(t, grid, item, rule)};
      return;
    }
    partials[item] = gradient_item<true, kTargets, scalar_t, T>(p, t, nullptr, scale, dp, dt, grid, item, eps, rule);
    if (partials[item].num_valid < grid.span(item).boxes()) padding_seen.store(true, std::memory_order_relaxed);
  });
  int64_t present = 0;
  for (const Partial& part : partials) present += part.num_valid;
  return present;
}

// Forward and gradient in one pass, for the eager CPU path when a gradient
// will be needed: the loss (mean or sum), the count, and the gradient of
// that loss w.r.t. each requested box tensor, in the math dtype (float for
// fp16/bf16). The boxes are read and the per-box math done once per training
// step instead of twice. For "mean" the present boxes are counted first
// (padding rule: one read of the targets, unless the bet on a dense batch
// above wins; a mask or counts: far less), so the gradient comes out
// already divided by the count: the backward has nothing left to do for an
// upstream gradient of 1 and one in-place scaling otherwise
// (synclint/ops/_library.py).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> giou_loss_forward_grad_cpu(
    const at::Tensor& pred_in, const at::Tensor& target_in,
    const std::optional<at::Tensor>& valid_in, const std::optional<at::Tensor>& counts_in,
    c10::string_view reduction_name, double eps, std::array<bool, 2> output_mask) {
  const Boxes in(pred_in, target_in, valid_in, counts_in);
  const Reduction reduction = parse_reduction(reduction_name);
  TORCH_CHECK(reduction != Reduction::None, "giou_loss_forward_grad: reduction must be 'mean' or 'sum'");
  const auto math_options = in.pred.options().dtype(at::toOpMathType(in.pred.scalar_type()));
  thread_local RecycledBuffer recycled_d_pred, recycled_d_target;
  at::Tensor d_pred = output_mask[0] ? recycled_d_pred.empty(in.pred.sizes(), math_options)
                                     : in.pred.new_empty({0}, math_options);
  at::Tensor d_target = output_mask[1] ? recycled_d_target.empty(in.target.sizes(), math_options)
                                       : in.pred.new_empty({0}, math_options);
  std::vector<Partial> partials(in.grid.num_items);

  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, in.pred.scalar_type(), "giou_loss_forward_grad_cpu", [&] {
    using T = at::opmath_type<scalar_t>;
    const scalar_t* p = in.pred.const_data_ptr<scalar_t>();
    const scalar_t* t = in.target.const_data_ptr<scalar_t>();
    T* dp = output_mask[0] ? d_pred.mutable_data_ptr<T>() : nullptr;
    T* dt = output_mask[1] ? d_target.mutable_data_ptr<T>() : nullptr;
    const T e = static_cast<T>(eps);
    with_rule(in.mode, in.valid, in.counts, in.grid.slots, [&](auto rule) {
      with_bool(dt != nullptr, [&](auto targets) {
        constexpr bool kTargets = decltype(targets)::value;
        if (reduction == Reduction::Sum || (dp == nullptr && dt == nullptr)) {
          fused_pass<kTargets>(p, t, T(1), dp, dt, in.grid, e, rule, partials);
          return;
        }
        // "mean": the same scale the registered backward computes for an upstream gradient of 1.
        int64_t present = -1;
        if constexpr (std::is_same_v<decltype(rule), PaddingRule>) {
          present = fused_pass_if_dense<kTargets>(p, t, dp, dt, in.grid, e, rule, partials);
          if (present == in.grid.rows * in.grid.slots) return;  // the bet won: the gradient is done
        }
        if (present < 0) present = count_present(t, in.grid, rule);
        fused_pass<kTargets>(p, t, T(1) / static_cast<T>(std::max<int64_t>(present, 1)), dp, dt, in.grid, e, rule,
                             partials);
      });
    });
  });
  auto [loss, num_valid] = finish_forward(partials, reduction, in.pred, at::Tensor());
  return {loss, num_valid, d_pred, d_target};
}

// d_box *= grad in place, the eager backward of giou_loss_forward_grad
// (synclint/ops/_library.py): grad is the upstream gradient of the loss, a
// scalar of d_box's dtype. An upstream gradient of exactly 1 (a plain
// `loss.backward()`) leaves d_box as it is: no pass over it at all. Reading
// the scalar here costs nothing (a CPU tensor), where Python would dispatch
// an op (`item`) that looks like a host synchronisation.
void giou_loss_scale_grad_cpu(at::Tensor& d_box, const at::Tensor& grad) {
  TORCH_CHECK(grad.dim() == 0 && grad.scalar_type() == d_box.scalar_type() && grad.device() == d_box.device(),
              "giou_loss_scale_grad_: grad must be a scalar of d_box's dtype and device, got ", grad.sizes(), " ",
              grad.scalar_type(), " on ", grad.device(), " for ", d_box.scalar_type(), " on ", d_box.device());
  AT_DISPATCH_FLOATING_TYPES(d_box.scalar_type(), "giou_loss_scale_grad_cpu", [&] {
    if (*grad.const_data_ptr<scalar_t>() != scalar_t(1)) d_box.mul_(grad);  // elementwise: any split agrees
  });
}

std::tuple<at::Tensor, at::Tensor> giou_loss_backward_cpu(
    const at::Tensor& grad_loss_in, const at::Tensor& pred_in, const at::Tensor& target_in,
    const std::optional<at::Tensor>& valid_in, const std::optional<at::Tensor>& counts_in,
    const at::Tensor& num_valid, c10::string_view reduction_name, double eps,
    std::array<bool, 2> output_mask) {
  const Boxes in(pred_in, target_in, valid_in, counts_in);
  const Reduction reduction = parse_reduction(reduction_name);
  check_backward_inputs(grad_loss_in, pred_in, num_valid, reduction);
  const at::Tensor grad_loss = grad_loss_in.to(in.pred.scalar_type()).contiguous();
  // Unrequested gradients come back as empty tensors (autograd maps them to None).
  thread_local RecycledBuffer recycled_grad_pred, recycled_grad_target;
  at::Tensor grad_pred =
      output_mask[0] ? recycled_grad_pred.empty(in.pred.sizes(), in.pred.options()) : in.pred.new_empty({0});
  at::Tensor grad_target =
      output_mask[1] ? recycled_grad_target.empty(in.target.sizes(), in.target.options()) : in.target.new_empty({0});

  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, in.pred.scalar_type(), "giou_loss_backward_cpu", [&] {
    using T = at::opmath_type<scalar_t>;
    const scalar_t* p = in.pred.const_data_ptr<scalar_t>();
    const scalar_t* t = in.target.const_data_ptr<scalar_t>();
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
    if (gp == nullptr && gt == nullptr) return;
    with_rule(in.mode, in.valid, in.counts, in.grid.slots, [&](auto rule) {
      for_each_item(in.grid.num_items, [&](int64_t item) {
        gradient_item<false, true, scalar_t, scalar_t>(p, t, g_box, g_scale, gp, gt, in.grid, item,
                                                       static_cast<T>(eps), rule);
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
  m.impl("giou_loss_forward_grad", &synclint::giou::giou_loss_forward_grad_cpu);
  m.impl("giou_loss_scale_grad_", &synclint::giou::giou_loss_scale_grad_cpu);
  m.impl("giou_loss_backward", &synclint::giou::giou_loss_backward_cpu);
}
