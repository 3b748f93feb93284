// Blocked weight-only quantization of a MatMul weight B [K, N]: every column n is cut along
// K into blocks of `block` values, each with its own scale (and zero point when asymmetric),
// and the values are rounded to `bits`-bit integers. The result is kept in one neutral form
// (unsigned codes, MatMulNBits' [N, K] order) and written out as either of the two formats
// octet exports: com.microsoft.MatMulNBits (ort target) or a blocked DequantizeLinear
// (opset 21) feeding the MatMul (standard profile).
//
// Rounding to nearest (RTN), per block:
//   symmetric:  m = the value of largest magnitude, s = m / -2^(bits-1) (llama.cpp's Q4_0
//               choice: m lands exactly on the most negative code, the other side keeps
//               2^(bits-1) - 1 steps), q = clamp(round(w / s), -2^(bits-1), 2^(bits-1) - 1);
//               stored as q + 2^(bits-1), which is MatMulNBits' default zero point. s is
//               negative where m is positive (both formats allow any finite scale).
//   asymmetric: lo = min(0, min w), hi = max(0, max w), s = (hi - lo) / (2^bits - 1),
//               z = clamp(round(-lo / s)), q = clamp(round(w / s) + z, 0, 2^bits - 1).
// An all-zero block gets s = 1 (its codes all equal the zero point). round() is half to even.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/tensor.h"

namespace octet::quant {

struct BlockQuantized {
  int bits = 4;
  int64_t K = 0, N = 0, block = 0, k_blocks = 0;
  bool symmetric = true;
  std::vector<uint8_t> codes;   // [N, K], 0 .. 2^bits - 1
  std::vector<float> scales;    // [N, k_blocks]
  std::vector<uint8_t> zeros;   // [N, k_blocks] (symmetric: all 2^(bits-1))
};

// w: float32 [K, N] row-major. col_scale (optional, [K]) multiplies row k of w before
// quantizing (AWQ's equalization; the caller divides the activation by it).
BlockQuantized quantize_blocks_rtn(const float* w, int64_t K, int64_t N, int bits, int64_t block, bool symmetric,
                                   const float* col_scale = nullptr);

// The dequantized value of element (k, n) as the float [K, N] weight it stands for.
float dequantized(const BlockQuantized& q, int64_t k, int64_t n);

// com.microsoft.MatMulNBits inputs 1..3: B uint8 [N, k_blocks, block * bits / 8] (LSB
// first), scales float32 [N * k_blocks], zero points packed uint8 [N * ceil(k_blocks *
// bits / 8)] (absent when symmetric: the op's default 2^(bits-1) is what was stored).
struct NbitsTensors {
  Tensor b, scales;
  std::optional<Tensor> zero_points;
};
NbitsTensors to_matmul_nbits(const BlockQuantized& q);

// DequantizeLinear(q, scales, zero_points, axis 0, block_size) inputs: q [K, N] int4/int8
// (symmetric, no zero point) or uint4/uint8 with zero points [k_blocks, N]; scales
// float32 [k_blocks, N].
struct BlockedDq {
  Tensor q, scales;
  std::optional<Tensor> zero_points;
};
BlockedDq to_blocked_dq(const BlockQuantized& q);

// The inverse of to_blocked_dq for any blocked DequantizeLinear weight: q int4/uint4/int8/
// uint8 [K, N], scales float32 [ceil(K / block), N], zero points of q's type and the
// scales' shape or null (0). Signed values v become codes v + 2^(bits-1) and their zero
// points likewise, so the dequantized values are the same numbers. `symmetric` is set when
// every zero point is 2^(bits-1) (MatMulNBits' default: no zero-point input needed).
// nullopt for any other type or shape.
std::optional<BlockQuantized> from_blocked_dq(const Tensor& q, const Tensor& scales, const Tensor* zero_points,
                                              int64_t block);

}  // namespace octet::quant
