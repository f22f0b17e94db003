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
// presence test, a 4-wide deinterleave that also widens fp16/bf16, the
// branch-free per-box math and the write-back.
//
// A chunk of kTile consecutive slots whose boxes are all present (a dense
// batch) goes through the math as it was loaded. The present boxes of every
// other chunk are packed into a stage, run by run, until kTile of them are
// waiting, from as many chunks and images of a work item as it takes: the
// seed's detection batches hold 0 to 10 boxes in 256 slots per image, and
// each image used to cost at least one vector of math and its loads.
// Which path a slot takes, and its lane, depend only on which slots are
// present, so the three validity modes give the same bits when they agree on
// presence.
constexpr int64_t kTile = 64;

// Everything a kernel loop calls is forced inline into the multiversioned
// item functions (below): compiled on its own, it would get the baseline
// target only (SSE2 on x86-64), not the AVX2 clone's.
#if defined(_MSC_VER)
#define SYNCLINT_INLINE __forceinline
#else
#define SYNCLINT_INLINE inline __attribute__((always_inline))
#endif

// kTile boxes as the math reads them.
template <typename T>
struct Lanes {  // not zeroed: every lane the math reads is written first
  alignas(64) T p[4][kTile];
  alignas(64) T t[4][kTile];
  alignas(64) T present[kTile];  // 1 or 0: a float mask vectorises where bool does not
};

// Staged lanes [lane, lane + len) hold the boxes of slots [flat, flat + len).
struct Run {
  int64_t flat;
  int64_t lane;
  int64_t len;
};

template <typename T>
struct Tile {
  Lanes<T> chunk;  // kTile consecutive slots, as the validity rule fills them
  Lanes<T> stage;  // present boxes of chunks that are not whole, packed
  Run runs[kTile];  // where the stage's lanes came from (a run is at least one lane)
  int64_t staged = 0;
  int64_t num_runs = 0;
  // Loss sum and present count per lane, over a whole work item: one vector
  // add per vector of boxes. (An `omp simd` reduction per tile ends in a
  // scalar, in-order sum of the vector's lanes: two 16-add dependency chains
  // per 64 boxes.) Exact counts: a lane sees far below 2^24 boxes.
  alignas(64) T loss_lanes[kTile] = {};
  alignas(64) T count_lanes[kTile] = {};
};

template <typename T>
struct BoxPair {
  T p[4];
  T t[4];
};

template <typename T>
SYNCLINT_INLINE BoxPair<T> lane_box(const Lanes<T>& lanes, int64_t j) {
  BoxPair<T> box;
  for (int k = 0; k < 4; ++k) {
    box.p[k] = lanes.p[k][j];
    box.t[k] = lanes.t[k][j];
  }
  return box;
}

// Lanes [w, m) of the stage, past its last box, hold the unit box and no
// presence: their discarded math stays finite, so a zero upstream gradient
// gives exact zeros (no inf * 0 = NaN), whatever a previous stage left there.
template <typename T>
SYNCLINT_INLINE void unit_box_after(Lanes<T>& lanes, int64_t w, int64_t m) {
  for (int k = 0; k < 4; ++k) {
    const T unit = k < 2 ? T(0) : T(1);
    for (int64_t j = w; j < m; ++j) {
      lanes.p[k][j] = unit;
      lanes.t[k][j] = unit;
    }
  }
  for (int64_t j = w; j < m; ++j) lanes.present[j] = T(0);
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

// Deinterleaves (and widens) the n boxes at `boxes` into lanes [lane, lane + n):
// a loop GCC vectorises.
template <typename scalar_t, typename T>
SYNCLINT_INLINE void deinterleave(const scalar_t* __restrict__ boxes, int64_t n, T (&out)[4][kTile], int64_t lane) {
  for (int64_t j = 0; j < n; ++j) {
    for (int k = 0; k < 4; ++k) out[k][lane + j] = static_cast<T>(boxes[4 * j + k]);
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
  SYNCLINT_INLINE void fill(int64_t begin, int64_t n, const scalar_t* __restrict__ target, Lanes<T>& chunk) const {
    deinterleave(target + 4 * begin, n, chunk.t, 0);
    for (int64_t j = 0; j < n; ++j) {
      chunk.present[j] = is_padding(chunk.t[0][j], chunk.t[1][j], chunk.t[2][j], chunk.t[3][j]) ? T(0) : T(1);
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
  SYNCLINT_INLINE void fill(int64_t begin, int64_t n, const scalar_t*, Lanes<T>& chunk) const {
    for (int64_t j = 0; j < n; ++j) chunk.present[j] = mask[begin + j] ? T(1) : T(0);
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
  SYNCLINT_INLINE void fill(int64_t, int64_t n, const scalar_t*, Lanes<T>& chunk) const {
    for (int64_t j = 0; j < n; ++j) chunk.present[j] = T(1);  // `end` already trimmed
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

// Fills chunk.present for boxes [begin, begin + n) (n <= kTile) and returns
// how many are present.
template <typename scalar_t, typename T, typename Rule>
SYNCLINT_INLINE int64_t chunk_presence(const scalar_t* __restrict__ target, int64_t begin, int64_t n,
                                       const Rule& rule, Lanes<T>& chunk) {
  rule.fill(begin, n, target, chunk);
  if constexpr (Rule::kCountsFromMetadata) return n;  // `end` trimmed: every slot is present
  T present = 0;
#pragma omp simd reduction(+ : present)
  for (int64_t j = 0; j < n; ++j) present += chunk.present[j];
  return static_cast<int64_t>(present);  // exact: at most kTile
}

// The end of the run of slots from j on that are all present (or all absent).
template <typename T>
SYNCLINT_INLINE int64_t run_end(const Lanes<T>& chunk, int64_t j, int64_t n) {
  const bool present = chunk.present[j] != T(0);
  int64_t end = j + 1;
  while (end < n && (chunk.present[end] != T(0)) == present) ++end;
  return end;
}

// A whole chunk (kTile present boxes at slot `first`): its targets are
// loaded unless the rule's presence test already did.
template <typename scalar_t, typename T, typename Rule>
SYNCLINT_INLINE void load_whole_chunk(const scalar_t* __restrict__ pred, const scalar_t* __restrict__ target,
                                      int64_t first, const Rule&, Lanes<T>& chunk) {
  deinterleave(pred + 4 * first, kTile, chunk.p, 0);
  if (!Rule::kLoadsTargets) deinterleave(target + 4 * first, kTile, chunk.t, 0);
}

// Appends slots [flat, flat + len), chunk slots [j, j + len), all present, to
// the stage (len must fit).
template <typename scalar_t, typename T, typename Rule>
SYNCLINT_INLINE void stage_run(const scalar_t* __restrict__ pred, const scalar_t* __restrict__ target,
                               int64_t flat, int64_t j, int64_t len, const Rule&, Tile<T>& tile) {
  const int64_t lane = tile.staged;
  Lanes<T>& stage = tile.stage;
  deinterleave(pred + 4 * flat, len, stage.p, lane);
  if (Rule::kLoadsTargets) {
    for (int k = 0; k < 4; ++k) {
      for (int64_t i = 0; i < len; ++i) stage.t[k][lane + i] = tile.chunk.t[k][j + i];
    }
  } else {
    deinterleave(target + 4 * flat, len, stage.t, lane);
  }
  for (int64_t i = 0; i < len; ++i) stage.present[lane + i] = T(1);
  tile.runs[tile.num_runs++] = Run{flat, lane, len};
  tile.staged += len;
}

// The math runs on lanes [0, m): the staged boxes rounded up to a whole
// number of vectors (16 floats: an AVX-512 register, two AVX2 ones).
SYNCLINT_INLINE int64_t math_extent(int64_t staged) {
  constexpr int64_t kVector = 16;
  return std::min(kTile, (staged + kVector - 1) / kVector * kVector);
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

template <typename out_t>
SYNCLINT_INLINE void zero_boxes(out_t* out, int64_t begin, int64_t end) {
  if (out != nullptr && end > begin) std::fill(out + 4 * begin, out + 4 * end, out_t(0));
}

// Per-box losses of lanes [0, m) into `loss` (0 in absent lanes), added to
// the tile's lanes.
template <typename T>
SYNCLINT_INLINE void forward_math(const Lanes<T>& lanes, int64_t m, T eps, T (&loss)[kTile], Tile<T>& tile) {
#pragma omp simd
  for (int64_t j = 0; j < m; ++j) {
    const BoxPair<T> b = lane_box(lanes, j);
    const T box = box_loss(b.p[0], b.p[1], b.p[2], b.p[3], b.t[0], b.t[1], b.t[2], b.t[3], eps);
    loss[j] = lanes.present[j] != T(0) ? box : T(0);
    tile.loss_lanes[j] += loss[j];
    tile.count_lanes[j] += lanes.present[j];
  }
}

// The staged boxes' losses, written to per_box (when non-null) run by run;
// the stage is empty afterwards.
template <typename scalar_t, typename T>
SYNCLINT_INLINE void forward_stage(scalar_t* __restrict__ per_box, T eps, Tile<T>& tile) {
  if (tile.staged == 0) return;
  const int64_t m = math_extent(tile.staged);
  unit_box_after(tile.stage, tile.staged, m);
  T loss[kTile];
  forward_math(tile.stage, m, eps, loss, tile);
  if (per_box != nullptr) {
    for (int64_t r = 0; r < tile.num_runs; ++r) {
      const Run run = tile.runs[r];
      for (int64_t i = 0; i < run.len; ++i) per_box[run.flat + i] = static_cast<scalar_t>(loss[run.lane + i]);
    }
  }
  tile.staged = 0;
  tile.num_runs = 0;
}

// Loss over slots [slot_begin, slot_end) of image `row`, added to the
// tile's lanes, and, when `per_box` is non-null (reduction="none"), each
// slot's loss (absent slots: 0). Boxes staged here may be computed by a later
// segment of the item, or by forward_stage at its end.
template <typename scalar_t, typename T, typename Rule>
SYNCLINT_INLINE void forward_segment(const scalar_t* __restrict__ pred, const scalar_t* __restrict__ target,
                                     scalar_t* __restrict__ per_box, int64_t slots, int64_t row,
                                     int64_t slot_begin, int64_t slot_end, T eps, const Rule& rule,
                                     Tile<T>& tile) {
  const int64_t base = row * slots;
  const int64_t read_end = rule.end(row, slot_begin, slot_end);
  for (int64_t chunk_begin = slot_begin; chunk_begin < read_end; chunk_begin += kTile) {
    const int64_t n = std::min(kTile, read_end - chunk_begin);
    const int64_t first = base + chunk_begin;
    const int64_t present = chunk_presence(target, first, n, rule, tile.chunk);
    if (present == kTile) {
      T loss[kTile];
      load_whole_chunk(pred, target, first, rule, tile.chunk);
      forward_math(tile.chunk, kTile, eps, loss, tile);
      if (per_box != nullptr) {
        for (int64_t j = 0; j < kTile; ++j) per_box[first + j] = static_cast<scalar_t>(loss[j]);
      }
      continue;
    }
    int64_t j = 0;
    for (int64_t left = present; left > 0;) {  // past the last present slot: absent
      const int64_t end = run_end(tile.chunk, j, n);
      if (tile.chunk.present[j] == T(0)) {
        if (per_box != nullptr) std::fill(per_box + first + j, per_box + first + end, scalar_t(0));
        j = end;
        continue;
      }
      left -= end - j;
      while (j < end) {
        const int64_t len = std::min(end - j, kTile - tile.staged);
        stage_run(pred, target, first + j, j, len, rule, tile);
        j += len;
        if (tile.staged == kTile) forward_stage(per_box, eps, tile);
      }
    }
    if (per_box != nullptr) std::fill(per_box + first + j, per_box + first + n, scalar_t(0));
  }
  if (per_box != nullptr) std::fill(per_box + base + read_end, per_box + base + slot_end, scalar_t(0));
}

// Gradients of lanes [0, m) into d_pred / d_target, from the upstream
// gradient g (kWithLoss: present * grad_scale, computed here); with kWithLoss
// the losses are added to the tile's lanes too.
template <bool kWithLoss, bool kTargets, typename T>
SYNCLINT_INLINE void gradient_math(const Lanes<T>& lanes, int64_t m, const T (&g)[kTile], T grad_scale, T eps,
                                   T (&d_pred)[4][kTile], T (&d_target)[4][kTile], Tile<T>& tile) {
#pragma omp simd
  for (int64_t j = 0; j < m; ++j) {
    const BoxPair<T> b = lane_box(lanes, j);
    const T g_box = kWithLoss ? lanes.present[j] * grad_scale : g[j];  // present is 1 or 0
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
      tile.loss_lanes[j] += lanes.present[j] != T(0) ? d.loss : T(0);
      tile.count_lanes[j] += lanes.present[j];
    }
  }
}

// Writes lanes [lane, lane + n) of a gradient to boxes [flat, flat + n).
template <typename out_t, typename T>
SYNCLINT_INLINE void interleave(const T (&d)[4][kTile], int64_t lane, int64_t n, out_t* __restrict__ out,
                                int64_t flat) {
  out_t* __restrict__ boxes = out + 4 * flat;
  for (int64_t j = 0; j < n; ++j)
    for (int k = 0; k < 4; ++k) boxes[4 * j + k] = static_cast<out_t>(d[k][lane + j]);
}

// The staged boxes' gradients, written run by run; the stage is empty afterwards.
template <bool kWithLoss, bool kTargets, typename scalar_t, typename out_t, typename T>
SYNCLINT_INLINE void gradient_stage(const scalar_t* __restrict__ grad_per_box, T grad_scale,
                                    out_t* __restrict__ grad_pred, out_t* __restrict__ grad_target, T eps,
                                    Tile<T>& tile) {
  if (tile.staged == 0) return;
  const int64_t m = math_extent(tile.staged);
  unit_box_after(tile.stage, tile.staged, m);
  T g[kTile];
  T d_pred[4][kTile];
  T d_target[4][kTile];
  if (!kWithLoss && grad_per_box == nullptr) {
    for (int64_t j = 0; j < m; ++j) g[j] = tile.stage.present[j] != T(0) ? grad_scale : T(0);
  } else if (!kWithLoss) {
    for (int64_t j = 0; j < m; ++j) g[j] = T(0);
    for (int64_t r = 0; r < tile.num_runs; ++r) {
      const Run run = tile.runs[r];
      for (int64_t i = 0; i < run.len; ++i) g[run.lane + i] = static_cast<T>(grad_per_box[run.flat + i]);
    }
  }
  gradient_math<kWithLoss, kTargets>(tile.stage, m, g, grad_scale, eps, d_pred, d_target, tile);
  for (int64_t r = 0; r < tile.num_runs; ++r) {
    const Run run = tile.runs[r];
    if (grad_pred != nullptr) interleave(d_pred, run.lane, run.len, grad_pred, run.flat);
    if (kTargets && grad_target != nullptr) interleave(d_target, run.lane, run.len, grad_target, run.flat);
  }
  tile.staged = 0;
  tile.num_runs = 0;
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
// Boxes staged here may be computed by a later segment of the item, or by
// gradient_stage at its end.
template <bool kWithLoss, bool kTargets, typename scalar_t, typename out_t, typename T, typename Rule>
SYNCLINT_INLINE void gradient_segment(const scalar_t* __restrict__ pred, const scalar_t* __restrict__ target,
                                      const scalar_t* __restrict__ grad_per_box, T grad_scale,
                                      out_t* __restrict__ grad_pred, out_t* __restrict__ grad_target,
                                      int64_t slots, int64_t row, int64_t slot_begin, int64_t slot_end, T eps,
                                      const Rule& rule, Tile<T>& tile) {
  const int64_t base = row * slots;
  const int64_t read_end = rule.end(row, slot_begin, slot_end);
  for (int64_t chunk_begin = slot_begin; chunk_begin < read_end; chunk_begin += kTile) {
    const int64_t n = std::min(kTile, read_end - chunk_begin);
    const int64_t first = base + chunk_begin;
    const int64_t present = chunk_presence(target, first, n, rule, tile.chunk);
    if (present == kTile) {
      T g[kTile];
      T d_pred[4][kTile];
      T d_target[4][kTile];
      load_whole_chunk(pred, target, first, rule, tile.chunk);
      if (!kWithLoss && grad_per_box == nullptr) {
        for (int64_t j = 0; j < kTile; ++j) g[j] = grad_scale;
      } else if (!kWithLoss) {
        for (int64_t j = 0; j < kTile; ++j) g[j] = static_cast<T>(grad_per_box[first + j]);
      }
      gradient_math<kWithLoss, kTargets>(tile.chunk, kTile, g, grad_scale, eps, d_pred, d_target, tile);
      if (grad_pred != nullptr) interleave(d_pred, 0, kTile, grad_pred, first);
      if (kTargets && grad_target != nullptr) interleave(d_target, 0, kTile, grad_target, first);
      continue;
    }
    int64_t j = 0;
    for (int64_t left = present; left > 0;) {  // past the last present slot: absent
      const int64_t end = run_end(tile.chunk, j, n);
      if (tile.chunk.present[j] == T(0)) {
        zero_boxes(grad_pred, first + j, first + end);
        zero_boxes(grad_target, first + j, first + end);
        j = end;
        continue;
      }
      left -= end - j;
      while (j < end) {
        const int64_t len = std::min(end - j, kTile - tile.staged);
        stage_run(pred, target, first + j, j, len, rule, tile);
        j += len;
        if (tile.staged == kTile) {
          gradient_stage<kWithLoss, kTargets>(grad_per_box, grad_scale, grad_pred, grad_target, eps, tile);
        }
      }
    }
    zero_boxes(grad_pred, first + j, first + n);
    zero_boxes(grad_target, first + j, first + n);
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
  forward_stage(per_box, eps, tile);
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
  gradient_stage<kWithLoss, kTargets>(grad_per_box, grad_scale, grad_pred, grad_target, eps, tile);
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
