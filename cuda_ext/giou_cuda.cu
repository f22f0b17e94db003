// CUDA kernels of synclint::giou_loss_forward / giou_loss_backward.
//
// Forward: one kernel, one thread per box. Each block reduces its boxes' losses
// and counts into one partial; the last block to finish (a ticket counter, the
// only atomic) adds the partials in block order and writes the loss and the box
// count, so the result does not depend on which block finished last.
// Backward: one thread per box; the mean's 1 / num_valid is read on the device,
// so nothing ever waits for the host.
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <cstdint>
#include <initializer_list>
#include <tuple>
#include <type_traits>

#include "giou.h"
#include "giou_host.h"

namespace synclint {
namespace giou {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

struct ValidityArgs {
  ValidityMode mode;
  const bool* mask;       // Mask mode
  const int64_t* counts;  // Counts mode
  int64_t slots;          // boxes per image
};

// A box's four coordinates as one aligned value: one 16-byte load or store per
// float32 box (8 bytes for half/bfloat16) instead of four strided scalar
// accesses, so each warp instruction moves whole cache sectors.
template <typename scalar_t>
struct alignas(4 * sizeof(scalar_t)) Box4 {
  scalar_t v[4];
};

// kVector: every box pointer is aligned to a whole box (checked on the host;
// the caching allocator's blocks are, a view at an odd offset may not be).
template <bool kVector, typename scalar_t, typename T>
__device__ __forceinline__ void load_box(const scalar_t* __restrict__ boxes, int64_t i, T& x1,
                                         T& y1, T& x2, T& y2) {
  if constexpr (kVector) {
    const Box4<scalar_t> box = reinterpret_cast<const Box4<scalar_t>*>(boxes)[i];
    x1 = static_cast<T>(box.v[0]);
    y1 = static_cast<T>(box.v[1]);
    x2 = static_cast<T>(box.v[2]);
    y2 = static_cast<T>(box.v[3]);
  } else {
    x1 = static_cast<T>(boxes[4 * i]);
    y1 = static_cast<T>(boxes[4 * i + 1]);
    x2 = static_cast<T>(boxes[4 * i + 2]);
    y2 = static_cast<T>(boxes[4 * i + 3]);
  }
}

template <bool kVector, typename scalar_t, typename T>
__device__ __forceinline__ void store_box(scalar_t* __restrict__ boxes, int64_t i, const T (&values)[4]) {
  if constexpr (kVector) {
    Box4<scalar_t> box;
    for (int k = 0; k < 4; ++k) box.v[k] = static_cast<scalar_t>(values[k]);
    reinterpret_cast<Box4<scalar_t>*>(boxes)[i] = box;
  } else {
    for (int k = 0; k < 4; ++k) boxes[4 * i + k] = static_cast<scalar_t>(values[k]);
  }
}

// Whether box i is present, and its boxes in p* and t* when it is. With a
// mask or counts the boxes of an absent slot are never read, and both boxes
// of a present one are loaded together. With padding rows the target must be
// read to know, and the prediction is read only for a present slot. (Loading
// every slot's prediction with its target, to save the dependent second load,
// measured no faster on an H100 in session 17: docs/giou.md.)
template <bool kVector, typename scalar_t, typename T>
__device__ __forceinline__ bool load_present(const ValidityArgs& v, const scalar_t* __restrict__ pred,
                                             const scalar_t* __restrict__ target, int64_t i, T (&p)[4],
                                             T (&t)[4]) {
  if (v.mode == ValidityMode::Padding) {  // uniform across the grid: no divergence
    load_box<kVector>(target, i, t[0], t[1], t[2], t[3]);
    const bool present = !is_padding(t[0], t[1], t[2], t[3]);
    if (present) load_box<kVector>(pred, i, p[0], p[1], p[2], p[3]);
    return present;
  }
  // Counts may be any int64 (2**63 - 1: all slots); the comparison never overflows.
  const bool present =
      v.mode == ValidityMode::Mask ? v.mask[i] : i % v.slots < v.counts[i / v.slots];
  if (present) {
    load_box<kVector>(target, i, t[0], t[1], t[2], t[3]);
    load_box<kVector>(pred, i, p[0], p[1], p[2], p[3]);
  }
  return present;
}

template <typename T>
__device__ __forceinline__ T warp_sum(T value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  return value;
}

// Sums a (value, count) pair over the block, valid in thread 0, in a fixed
// order (deterministic): both in one pass, one barrier pair.
template <typename T>
__device__ __forceinline__ void block_sum(T& value, long long& count, T* value_scratch,
                                          long long* count_scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  value = warp_sum(value);
  count = warp_sum(count);
  if (lane == 0) {
    value_scratch[warp] = value;
    count_scratch[warp] = count;
  }
  __syncthreads();
  value = threadIdx.x < kWarps ? value_scratch[threadIdx.x] : T(0);
  count = threadIdx.x < kWarps ? count_scratch[threadIdx.x] : 0;
  if (warp == 0) {
    value = warp_sum(value);
    count = warp_sum(count);
  }
  __syncthreads();  // the scratch is reused by the next call
}

// One box per thread: 1,024 blocks for B=1024, N=256, all resident in one
// wave. (Two boxes per thread, every load issued before any math, measured no
// faster on an H100 in session 17; four, with the loads chained, slower in
// session 9.)
template <bool kVector, typename scalar_t>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(const scalar_t* __restrict__ pred, const scalar_t* __restrict__ target,
                   ValidityArgs validity, int64_t num_boxes, at::opmath_type<scalar_t> eps,
                   scalar_t* __restrict__ per_box, double* __restrict__ partial_sums,
                   long long* __restrict__ partial_counts, unsigned int* __restrict__ ticket,
                   Reduction reduction, scalar_t* __restrict__ loss_out,
                   int64_t* __restrict__ num_valid_out) {
  using T = at::opmath_type<scalar_t>;
  __shared__ T sum_scratch[kWarps];
  __shared__ long long count_scratch[kWarps];
  __shared__ double total_scratch[kWarps];
  __shared__ bool is_last;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  T loss = 0;
  long long count = 0;
  if (i < num_boxes) {
    T p[4], t[4];
    if (load_present<kVector>(validity, pred, target, i, p, t)) {
      loss = box_loss(p[0], p[1], p[2], p[3], t[0], t[1], t[2], t[3], eps);
      count = 1;
    }
    if (per_box != nullptr) per_box[i] = static_cast<scalar_t>(loss);
  }
  block_sum(loss, count, sum_scratch, count_scratch);
  if (threadIdx.x == 0) {
    partial_sums[blockIdx.x] = static_cast<double>(loss);
    partial_counts[blockIdx.x] = count;
    __threadfence();  // the partials are visible before the ticket says so
    is_last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!is_last) return;
  // The last block: every partial is written. Fixed order, L1 bypassed (__ldcg).
  double sum = 0;
  long long total = 0;
  for (int64_t b = threadIdx.x; b < gridDim.x; b += kThreads) {
    sum += __ldcg(partial_sums + b);
    total += __ldcg(partial_counts + b);
  }
  block_sum(sum, total, total_scratch, count_scratch);
  if (threadIdx.x == 0) {
    *num_valid_out = total;
    if (loss_out != nullptr) {
      const double divisor = reduction == Reduction::Mean ? static_cast<double>(total > 0 ? total : 1) : 1.0;
      *loss_out = static_cast<scalar_t>(static_cast<T>(sum / divisor));
    }
  }
}

template <bool kVector, typename scalar_t>
__global__ void __launch_bounds__(kThreads)
    backward_kernel(const scalar_t* __restrict__ pred, const scalar_t* __restrict__ target,
                    ValidityArgs validity, int64_t num_boxes, at::opmath_type<scalar_t> eps,
                    const scalar_t* __restrict__ grad, bool grad_per_box,
                    const int64_t* __restrict__ num_valid, bool mean,
                    scalar_t* __restrict__ grad_pred, scalar_t* __restrict__ grad_target) {
  using T = at::opmath_type<scalar_t>;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= num_boxes) return;
  T p[4], t[4];
  BoxGrads<T> d{};  // absent boxes: exact zeros, whatever their coordinates
  if (load_present<kVector>(validity, pred, target, i, p, t)) {
    T g = static_cast<T>(grad[grad_per_box ? i : 0]);
    if (mean) g /= static_cast<T>(*num_valid > 0 ? *num_valid : 1);
    d = box_loss_backward(p[0], p[1], p[2], p[3], t[0], t[1], t[2], t[3], eps, g);
  }
  if (grad_pred != nullptr) store_box<kVector>(grad_pred, i, d.p);
  if (grad_target != nullptr) store_box<kVector>(grad_target, i, d.t);
}

// Whether every box pointer (null ones aside) is aligned to a whole box.
template <typename scalar_t>
bool boxes_aligned(std::initializer_list<const void*> pointers) {
  for (const void* pointer : pointers) {
    if (pointer != nullptr && reinterpret_cast<std::uintptr_t>(pointer) % sizeof(Box4<scalar_t>) != 0) return false;
  }
  return true;
}

ValidityArgs validity_args(ValidityMode mode, const at::Tensor& valid, const at::Tensor& counts,
                           const at::Tensor& pred) {
  return {mode, valid.defined() ? valid.const_data_ptr<bool>() : nullptr,
          counts.defined() ? counts.const_data_ptr<int64_t>() : nullptr, slots_per_image(pred)};
}

int64_t num_blocks(int64_t num_boxes) { return (num_boxes + kThreads - 1) / kThreads; }

std::tuple<at::Tensor, at::Tensor> giou_loss_forward_cuda(
    const at::Tensor& pred_in, const at::Tensor& target_in,
    const std::optional<at::Tensor>& valid_in, const std::optional<at::Tensor>& counts_in,
    c10::string_view reduction_name, double eps) {
  const ValidityMode mode = check_inputs(pred_in, target_in, valid_in, counts_in);
  const Reduction reduction = parse_reduction(reduction_name);
  const c10::cuda::CUDAGuard device_guard(pred_in.device());
  const at::Tensor pred = pred_in.contiguous();
  const at::Tensor target = target_in.contiguous();
  const at::Tensor valid = valid_in.has_value() ? valid_in->contiguous() : at::Tensor();
  const at::Tensor counts = counts_in.has_value() ? counts_in->contiguous() : at::Tensor();
  const int64_t num_boxes = pred.numel() / 4;
  const int64_t blocks = num_blocks(num_boxes);
  const auto box_shape = pred.sizes().slice(0, pred.dim() - 1);

  at::Tensor loss = reduction == Reduction::None ? pred.new_empty(box_shape) : pred.new_empty({});
  at::Tensor num_valid = pred.new_empty({}, pred.options().dtype(at::kLong));
  // At least one block, so that an empty input still writes the loss and count.
  // Every block writes its own partial: no zero fill. The ticket is the only
  // memory that must start at 0 (a memset, not a kernel).
  const int64_t grid = std::max<int64_t>(blocks, 1);
  at::Tensor partial_sums = pred.new_empty({grid}, pred.options().dtype(at::kDouble));
  at::Tensor partial_counts = pred.new_empty({grid}, pred.options().dtype(at::kLong));
  at::Tensor ticket = pred.new_empty({1}, pred.options().dtype(at::kInt));
  const ValidityArgs validity = validity_args(mode, valid, counts, pred);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  C10_CUDA_CHECK(cudaMemsetAsync(ticket.mutable_data_ptr<int>(), 0, sizeof(int), stream));

  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, pred.scalar_type(), "giou_loss_forward_cuda", [&] {
    using T = at::opmath_type<scalar_t>;
    scalar_t* per_box = reduction == Reduction::None ? loss.mutable_data_ptr<scalar_t>() : nullptr;
    const scalar_t* pred_data = pred.const_data_ptr<scalar_t>();
    const scalar_t* target_data = target.const_data_ptr<scalar_t>();
    with_bool(boxes_aligned<scalar_t>({pred_data, target_data}), [&](auto vector) {
      forward_kernel<decltype(vector)::value, scalar_t><<<static_cast<unsigned int>(grid), kThreads, 0, stream>>>(
          pred_data, target_data, validity, num_boxes, static_cast<T>(eps), per_box,
          partial_sums.mutable_data_ptr<double>(),
          reinterpret_cast<long long*>(partial_counts.mutable_data_ptr<int64_t>()),
          reinterpret_cast<unsigned int*>(ticket.mutable_data_ptr<int>()), reduction,
          reduction == Reduction::None ? nullptr : loss.mutable_data_ptr<scalar_t>(),
          num_valid.mutable_data_ptr<int64_t>());
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return {loss, num_valid};
}

std::tuple<at::Tensor, at::Tensor> giou_loss_backward_cuda(
    const at::Tensor& grad_loss_in, const at::Tensor& pred_in, const at::Tensor& target_in,
    const std::optional<at::Tensor>& valid_in, const std::optional<at::Tensor>& counts_in,
    const at::Tensor& num_valid_in, c10::string_view reduction_name, double eps,
    std::array<bool, 2> output_mask) {
  const ValidityMode mode = check_inputs(pred_in, target_in, valid_in, counts_in);
  const Reduction reduction = parse_reduction(reduction_name);
  check_backward_inputs(grad_loss_in, pred_in, num_valid_in, reduction);
  const c10::cuda::CUDAGuard device_guard(pred_in.device());
  const at::Tensor pred = pred_in.contiguous();
  const at::Tensor target = target_in.contiguous();
  const at::Tensor valid = valid_in.has_value() ? valid_in->contiguous() : at::Tensor();
  const at::Tensor counts = counts_in.has_value() ? counts_in->contiguous() : at::Tensor();
  const at::Tensor grad_loss = grad_loss_in.to(pred.scalar_type()).contiguous();
  const at::Tensor num_valid = num_valid_in.contiguous();
  const int64_t num_boxes = pred.numel() / 4;
  at::Tensor grad_pred = output_mask[0] ? pred.new_empty(pred.sizes()) : pred.new_empty({0});
  at::Tensor grad_target = output_mask[1] ? target.new_empty(target.sizes()) : target.new_empty({0});
  if (num_boxes == 0 || !(output_mask[0] || output_mask[1])) return {grad_pred, grad_target};
  const ValidityArgs validity = validity_args(mode, valid, counts, pred);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();

  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, pred.scalar_type(), "giou_loss_backward_cuda", [&] {
    using T = at::opmath_type<scalar_t>;
    const scalar_t* pred_data = pred.const_data_ptr<scalar_t>();
    const scalar_t* target_data = target.const_data_ptr<scalar_t>();
    scalar_t* grad_pred_data = output_mask[0] ? grad_pred.mutable_data_ptr<scalar_t>() : nullptr;
    scalar_t* grad_target_data = output_mask[1] ? grad_target.mutable_data_ptr<scalar_t>() : nullptr;
    const bool aligned = boxes_aligned<scalar_t>({pred_data, target_data, grad_pred_data, grad_target_data});
    with_bool(aligned, [&](auto vector) {
      backward_kernel<decltype(vector)::value, scalar_t><<<num_blocks(num_boxes), kThreads, 0, stream>>>(
          pred_data, target_data, validity, num_boxes, static_cast<T>(eps), grad_loss.const_data_ptr<scalar_t>(),
          reduction == Reduction::None, num_valid.const_data_ptr<int64_t>(), reduction == Reduction::Mean,
          grad_pred_data, grad_target_data);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return {grad_pred, grad_target};
}

}  // namespace
}  // namespace giou
}  // namespace synclint

TORCH_LIBRARY_IMPL(synclint, CUDA, m) {
  m.impl("giou_loss_forward", &synclint::giou::giou_loss_forward_cuda);
  m.impl("giou_loss_backward", &synclint::giou::giou_loss_backward_cuda);
}
