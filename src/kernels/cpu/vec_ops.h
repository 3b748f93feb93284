// Row-level float32 helpers with runtime ISA dispatch, shared by the optimized kernels
// (Softmax, norms, GeLU, elementwise) and meant for fused kernels (attention) too.
//
// Each call looks up the table of the level active_isa() reports now (an atomic load),
// so ScopedIsaLevel in tests switches every helper. Hot loops that call a helper per
// row can fetch vec_ops() once per kernel call and use its function pointers.
//
// Accuracy: see simd/vec_impl.h. Every function takes float32 rows of n elements
// (n may be 0 or any size; no alignment needed) and the output may alias the input.
#pragma once

#include <cstdint>

#include "kernels/cpu/simd/vec_table.h"
#include "kernels/dispatch/cpu_features.h"

namespace octet::cpu {

// The table for one level: generic entries, overridden by AVX2 and then AVX-512 ones as
// the level allows. Asking for a level above detected_isa() is an internal error.
const VecTable& vec_table(IsaLevel level);
// The table for the active level.
inline const VecTable& vec_ops() { return vec_table(active_isa()); }

inline float max_of(const float* x, int64_t n) { return vec_ops().max(x, n); }
inline float sum_of(const float* x, int64_t n) { return vec_ops().sum(x, n); }
// y = x * s
inline void scale(const float* x, float s, float* y, int64_t n) { vec_ops().scale(x, s, y, n); }
// y = x + bias (elementwise, both n long): a bias row or one row of an additive mask.
inline void add_bias(const float* x, const float* bias, float* y, int64_t n) {
  vec_ops().binary[static_cast<int>(BinaryOp::Add)](x, bias, y, n);
}
inline void binary(BinaryOp op, const float* a, const float* b, float* y, int64_t n) {
  vec_ops().binary[static_cast<int>(op)](a, b, y, n);
}
inline void unary(UnaryOp op, const float* x, float* y, int64_t n) { vec_ops().unary[static_cast<int>(op)](x, y, n); }
inline void exp(const float* x, float* y, int64_t n) { unary(UnaryOp::Exp, x, y, n); }
// y = exp(x * scale - shift); returns sum(y). scale > 0.
inline float exp_sum(const float* x, float scale, float shift, float* y, int64_t n) {
  return vec_ops().exp_sum(x, scale, shift, y, n);
}
inline void gelu(const float* x, float* y, int64_t n, bool tanh_approx) {
  unary(tanh_approx ? UnaryOp::GeluTanh : UnaryOp::GeluErf, x, y, n);
}

// Softmax of each of `rows` rows of `cols` (row r at x + r*x_stride, written to
// y + r*y_stride) of x * scale; scale > 0 (attention passes 1/sqrt(head_dim)). Serial:
// callers parallelize over rows/heads themselves.
inline void softmax_rows(const float* x, float* y, int64_t rows, int64_t cols, int64_t x_stride,
                         int64_t y_stride, float scale = 1.0f) {
  const VecTable& t = vec_ops();
  for (int64_t r = 0; r < rows; ++r) t.softmax_row(x + r * x_stride, y + r * y_stride, cols, scale);
}

// LayerNormalization (center = true) or RMSNormalization (center = false) of each row of
// `cols`, with per-column gamma and optional beta (nullptr). Rows contiguous.
inline void norm_rows(const float* x, float* y, int64_t rows, int64_t cols, const float* gamma,
                      const float* beta, float eps, bool center) {
  const VecTable& t = vec_ops();
  for (int64_t r = 0; r < rows; ++r) t.norm_row(x + r * cols, y + r * cols, cols, gamma, beta, eps, center);
}

}  // namespace octet::cpu
