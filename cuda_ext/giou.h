// Per-box GIoU loss math shared by the CPU (giou.cpp) and CUDA (giou_cuda.cu)
// kernels, so both devices compute exactly the same formula.
//
// Boxes are (x1, y1, x2, y2). For a predicted box p and a target box t:
//
//   inter = clamp0(min(px2, tx2) - max(px1, tx1)) * clamp0(min(py2, ty2) - max(py1, ty1))
//   union = area(p) + area(t) - inter
//   encl  = clamp0(max(px2, tx2) - min(px1, tx1)) * clamp0(max(py2, ty2) - min(py1, ty1))
//   loss  = 1 - inter / (union + eps) + (encl - union) / (encl + eps)      (= 1 - GIoU)
//
// This is torchvision's generalized_box_iou_loss formula. Subgradient
// conventions (the Python reference, synclint/ops/reference.py, uses the same,
// so the kernels' gradients match it bit-for-bit up to rounding):
//   * clamp0(w) passes gradient only where w > 0 (touching boxes: none);
//   * a min/max tie between a pred and a target coordinate sends the whole
//     gradient to the prediction (torch.maximum would split it 50/50).
#pragma once

#include <cstdint>

// Force inlining: the CPU kernels only vectorise once the per-box math is
// inlined into their loops (GCC declines to inline the backward on its own).
#if defined(__CUDACC__) || defined(__HIPCC__)
#define SYNCLINT_BOX_FN __host__ __device__ __forceinline__
#elif defined(_MSC_VER)
#define SYNCLINT_BOX_FN __forceinline
#else
#define SYNCLINT_BOX_FN inline __attribute__((always_inline))
#endif

namespace synclint {
namespace giou {

enum class Reduction : int64_t { None = 0, Mean = 1, Sum = 2 };

// Every kernel reduces fixed-size chunks of boxes into per-chunk partial sums
// and then adds the partials in chunk order, so the result does not depend on
// the number of threads (CPU) or on atomics (CUDA): the op is deterministic.
constexpr int64_t kBoxesPerChunk = 2048;

template <typename T>
SYNCLINT_BOX_FN T clamp0(T w) {
  return w > T(0) ? w : T(0);
}

// 1 - GIoU for one box pair, computed in T (float for fp32/fp16/bf16 inputs).
template <typename T>
SYNCLINT_BOX_FN T box_loss(T px1, T py1, T px2, T py2,
                                  T tx1, T ty1, T tx2, T ty2, T eps) {
  const T area_p = (px2 - px1) * (py2 - py1);
  const T area_t = (tx2 - tx1) * (ty2 - ty1);
  const T iw = clamp0((px2 <= tx2 ? px2 : tx2) - (px1 >= tx1 ? px1 : tx1));
  const T ih = clamp0((py2 <= ty2 ? py2 : ty2) - (py1 >= ty1 ? py1 : ty1));
  const T inter = iw * ih;
  const T uni = area_p + area_t - inter;
  const T cw = clamp0((px2 >= tx2 ? px2 : tx2) - (px1 <= tx1 ? px1 : tx1));
  const T ch = clamp0((py2 >= ty2 ? py2 : ty2) - (py1 <= ty1 ? py1 : ty1));
  const T encl = cw * ch;
  return T(1) - inter / (uni + eps) + (encl - uni) / (encl + eps);
}

template <typename T>
struct BoxGrads {
  T p[4];
  T t[4];
  T loss;  // box_loss from the same intermediates (dropped by the compiler where unused)
};

// Closed-form gradient of box_loss w.r.t. both boxes, scaled by `g` (the
// upstream gradient of this box's loss). Recomputes the forward
// intermediates instead of saving them: a few flops are cheaper than the
// memory traffic of storing and re-reading activations. Also gives the loss
// itself, for the CPU forward that computes loss and gradient in one pass;
// it multiplies by the two reciprocals the gradient needs instead of
// dividing again (divisions dominate the vector math), so it can differ from
// box_loss in the last bits.
template <typename T>
SYNCLINT_BOX_FN BoxGrads<T> box_loss_backward(T px1, T py1, T px2, T py2,
                                                     T tx1, T ty1, T tx2, T ty2,
                                                     T eps, T g) {
  const T pw = px2 - px1, ph = py2 - py1;
  const T tw = tx2 - tx1, th = ty2 - ty1;

  // Which box supplies each edge of the intersection (i*) and the enclosure
  // (c*); ties go to the prediction.
  const bool ix1_p = px1 >= tx1, iy1_p = py1 >= ty1;
  const bool ix2_p = px2 <= tx2, iy2_p = py2 <= ty2;
  const bool cx1_p = px1 <= tx1, cy1_p = py1 <= ty1;
  const bool cx2_p = px2 >= tx2, cy2_p = py2 >= ty2;

  const T iw_raw = (ix2_p ? px2 : tx2) - (ix1_p ? px1 : tx1);
  const T ih_raw = (iy2_p ? py2 : ty2) - (iy1_p ? py1 : ty1);
  const T cw_raw = (cx2_p ? px2 : tx2) - (cx1_p ? px1 : tx1);
  const T ch_raw = (cy2_p ? py2 : ty2) - (cy1_p ? py1 : ty1);
  const T iw = clamp0(iw_raw), ih = clamp0(ih_raw);
  const T cw = clamp0(cw_raw), ch = clamp0(ch_raw);

  const T inter = iw * ih;
  const T uni = pw * ph + tw * th - inter;
  const T encl = cw * ch;
  const T uni_eps = uni + eps;
  const T encl_eps = encl + eps;

  // loss = 1 - I / (U + eps) + (C - U) / (C + eps), with U = Ap + At - I.
  const T inv_u = T(1) / uni_eps;
  const T inv_c = T(1) / encl_eps;
  const T d_union = g * (inter * inv_u * inv_u - inv_c);     // dloss/dU
  const T d_inter = -g * inv_u - d_union;                     // dloss/dI, via U too
  const T d_encl = g * uni_eps * inv_c * inv_c;               // dloss/dC

  // Chain through the clamped widths: zero where the clamp is active. (Select
  // values, never conditional arithmetic, so the loop stays branch-free.)
  const T d_iw = (iw_raw > T(0) ? d_inter : T(0)) * ih;
  const T d_ih = (ih_raw > T(0) ? d_inter : T(0)) * iw;
  const T d_cw = (cw_raw > T(0) ? d_encl : T(0)) * ch;
  const T d_ch = (ch_raw > T(0) ? d_encl : T(0)) * cw;

  // Masks as 0/1 values: multiplies vectorise where chains of selects on one
  // bool defeat GCC's if-conversion.
  const T m_ix1 = ix1_p ? T(1) : T(0), m_iy1 = iy1_p ? T(1) : T(0);
  const T m_ix2 = ix2_p ? T(1) : T(0), m_iy2 = iy2_p ? T(1) : T(0);
  const T m_cx1 = cx1_p ? T(1) : T(0), m_cy1 = cy1_p ? T(1) : T(0);
  const T m_cx2 = cx2_p ? T(1) : T(0), m_cy2 = cy2_p ? T(1) : T(0);
  BoxGrads<T> out;
  out.p[0] = -d_union * ph - m_ix1 * d_iw - m_cx1 * d_cw;
  out.p[1] = -d_union * pw - m_iy1 * d_ih - m_cy1 * d_ch;
  out.p[2] = d_union * ph + m_ix2 * d_iw + m_cx2 * d_cw;
  out.p[3] = d_union * pw + m_iy2 * d_ih + m_cy2 * d_ch;
  out.t[0] = -d_union * th - (T(1) - m_ix1) * d_iw - (T(1) - m_cx1) * d_cw;
  out.t[1] = -d_union * tw - (T(1) - m_iy1) * d_ih - (T(1) - m_cy1) * d_ch;
  out.t[2] = d_union * th + (T(1) - m_ix2) * d_iw + (T(1) - m_cx2) * d_cw;
  out.t[3] = d_union * tw + (T(1) - m_iy2) * d_ih + (T(1) - m_cy2) * d_ch;
  out.loss = T(1) - inter * inv_u + (encl - uni) * inv_c;
  return out;
}

// The default validity rule: a target row of four zeros is padding.
template <typename T>
SYNCLINT_BOX_FN bool is_padding(T tx1, T ty1, T tx2, T ty2) {
  // `&`, not `&&`: no short-circuit branches in the vectorised loops.
  return (tx1 == T(0)) & (ty1 == T(0)) & (tx2 == T(0)) & (ty2 == T(0));
}

}  // namespace giou
}  // namespace synclint
