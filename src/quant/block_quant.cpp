#include "quant/block_quant.h"

#include <algorithm>
#include <cmath>

#include "core/sizes.h"
#include "octet/error.h"

namespace octet::quant {

BlockQuantized quantize_blocks_rtn(const float* w, int64_t K, int64_t N, int bits, int64_t block, bool symmetric,
                                   const float* col_scale) {
  if (bits != 4 && bits != 8) fail("weight-only quantization takes 4 or 8 bits, got ", bits);
  if (block <= 0 || K <= 0 || N <= 0) fail("block quantization needs positive K, N and block (", K, ", ", N, ", ", block, ")");
  checked_numel({K, N}, "weight to quantize");
  BlockQuantized q;
  q.bits = bits, q.K = K, q.N = N, q.block = block, q.symmetric = symmetric;
  q.k_blocks = (K + block - 1) / block;
  q.codes.resize(static_cast<size_t>(N * K));
  q.scales.resize(static_cast<size_t>(N * q.k_blocks));
  q.zeros.resize(static_cast<size_t>(N * q.k_blocks));
  const int levels = (1 << bits) - 1, half = 1 << (bits - 1);
  // Columns are independent: both cores share them (a 135M model has 135M weights to round).
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    std::vector<float> v(static_cast<size_t>(block));
    for (int64_t kb = 0; kb < q.k_blocks; ++kb) {
      const int64_t k0 = kb * block, len = std::min(block, K - k0);
      for (int64_t j = 0; j < len; ++j) v[j] = w[(k0 + j) * N + n] * (col_scale ? col_scale[k0 + j] : 1.0f);
      float s;
      int zero;
      if (symmetric) {
        float m = 0.0f;
        for (int64_t j = 0; j < len; ++j)
          if (std::fabs(v[j]) > std::fabs(m)) m = v[j];
        s = m / static_cast<float>(-half);
        zero = half;
      } else {
        float lo = 0.0f, hi = 0.0f;
        for (int64_t j = 0; j < len; ++j) lo = std::min(lo, v[j]), hi = std::max(hi, v[j]);
        s = (hi - lo) / static_cast<float>(levels);
        zero = s == 0.0f ? 0 : static_cast<int>(std::clamp(std::nearbyint(-lo / s), 0.0f, static_cast<float>(levels)));
      }
      if (s == 0.0f || !std::isfinite(s)) s = 1.0f;
      q.scales[n * q.k_blocks + kb] = s;
      q.zeros[n * q.k_blocks + kb] = static_cast<uint8_t>(zero);
      for (int64_t j = 0; j < len; ++j) {
        const float r = std::nearbyint(v[j] / s) + static_cast<float>(zero);
        q.codes[n * K + k0 + j] = static_cast<uint8_t>(std::clamp(r, 0.0f, static_cast<float>(levels)));
      }
    }
  }
  return q;
}

float dequantized(const BlockQuantized& q, int64_t k, int64_t n) {
  const int64_t b = n * q.k_blocks + k / q.block;
  return static_cast<float>(static_cast<int>(q.codes[n * q.K + k]) - q.zeros[b]) * q.scales[b];
}

NbitsTensors to_matmul_nbits(const BlockQuantized& q) {
  const int64_t blob = q.block * q.bits / 8, zrow = (q.k_blocks * q.bits + 7) / 8;
  NbitsTensors t{Tensor(DType::UInt8, {q.N, q.k_blocks, blob}), Tensor(DType::Float32, {q.N * q.k_blocks}), std::nullopt};
  uint8_t* b = t.b.mutable_raw();
  std::fill(b, b + t.b.numel(), uint8_t{0});  // the tail block's padding codes are 0
  for (int64_t n = 0; n < q.N; ++n)
    for (int64_t k = 0; k < q.K; ++k)
      set_packed(b + (n * q.k_blocks + k / q.block) * blob, k % q.block, q.bits, q.codes[n * q.K + k]);
  std::copy(q.scales.begin(), q.scales.end(), t.scales.mutable_data<float>());
  if (!q.symmetric) {
    t.zero_points = Tensor(DType::UInt8, {q.N * zrow});
    uint8_t* z = t.zero_points->mutable_raw();
    std::fill(z, z + t.zero_points->numel(), uint8_t{0});
    for (int64_t n = 0; n < q.N; ++n)
      for (int64_t kb = 0; kb < q.k_blocks; ++kb) set_packed(z + n * zrow, kb, q.bits, q.zeros[n * q.k_blocks + kb]);
  }
  return t;
}

BlockedDq to_blocked_dq(const BlockQuantized& q) {
  const DType qt = q.bits == 4 ? (q.symmetric ? DType::Int4 : DType::UInt4) : (q.symmetric ? DType::Int8 : DType::UInt8);
  BlockedDq t{Tensor(qt, {q.K, q.N}), Tensor(DType::Float32, {q.k_blocks, q.N}), std::nullopt};
  uint8_t* p = t.q.mutable_raw();
  const int half = 1 << (q.bits - 1);
  for (int64_t k = 0; k < q.K; ++k)
    for (int64_t n = 0; n < q.N; ++n) {
      const int code = q.codes[n * q.K + k];
      // Symmetric: the signed value code - 2^(bits-1), two's complement in `bits` bits.
      const uint8_t stored = static_cast<uint8_t>(q.symmetric ? (code - half) & ((1 << q.bits) - 1) : code);
      if (q.bits == 4) set_packed(p, k * q.N + n, 4, stored);
      else p[k * q.N + n] = q.symmetric ? static_cast<uint8_t>(static_cast<int8_t>(code - half)) : stored;
    }
  float* s = t.scales.mutable_data<float>();
  for (int64_t kb = 0; kb < q.k_blocks; ++kb)
    for (int64_t n = 0; n < q.N; ++n) s[kb * q.N + n] = q.scales[n * q.k_blocks + kb];
  if (!q.symmetric) {
    t.zero_points = Tensor(qt, {q.k_blocks, q.N});
    uint8_t* z = t.zero_points->mutable_raw();
    for (int64_t kb = 0; kb < q.k_blocks; ++kb)
      for (int64_t n = 0; n < q.N; ++n) {
        if (q.bits == 4) set_packed(z, kb * q.N + n, 4, q.zeros[n * q.k_blocks + kb]);
        else z[kb * q.N + n] = q.zeros[n * q.k_blocks + kb];
      }
  }
  return t;
}

std::optional<BlockQuantized> from_blocked_dq(const Tensor& q, const Tensor& scales, const Tensor* zero_points,
                                              int64_t block) {
  const DType t = q.dtype();
  const bool four = t == DType::Int4 || t == DType::UInt4, is_signed = t == DType::Int4 || t == DType::Int8;
  if (!four && t != DType::Int8 && t != DType::UInt8) return std::nullopt;
  if (q.rank() != 2 || block <= 0 || scales.dtype() != DType::Float32 || scales.rank() != 2) return std::nullopt;
  BlockQuantized b;
  b.bits = four ? 4 : 8, b.K = q.shape()[0], b.N = q.shape()[1], b.block = block;
  b.k_blocks = (b.K + block - 1) / block;
  if (b.K == 0 || b.N == 0 || scales.shape() != std::vector<int64_t>{b.k_blocks, b.N}) return std::nullopt;
  if (zero_points && (zero_points->dtype() != t || zero_points->shape() != scales.shape())) return std::nullopt;
  const int half = 1 << (b.bits - 1), mask = (1 << b.bits) - 1;
  auto code = [&](const Tensor& x, int64_t i) {
    const int raw = four ? get_packed(x.raw(), i, 4) : x.raw()[i];
    // Signed: sign-extend, then shift into 0 .. 2^bits - 1.
    return is_signed ? ((raw ^ half) & mask) : raw;
  };
  b.codes.resize(static_cast<size_t>(b.N * b.K));
  for (int64_t k = 0; k < b.K; ++k)
    for (int64_t n = 0; n < b.N; ++n) b.codes[n * b.K + k] = static_cast<uint8_t>(code(q, k * b.N + n));
  b.scales.resize(static_cast<size_t>(b.N * b.k_blocks));
  b.zeros.resize(b.scales.size());
  b.symmetric = true;
  const float* s = scales.data<float>();
  for (int64_t kb = 0; kb < b.k_blocks; ++kb)
    for (int64_t n = 0; n < b.N; ++n) {
      b.scales[n * b.k_blocks + kb] = s[kb * b.N + n];
      const int z = zero_points ? code(*zero_points, kb * b.N + n) : (is_signed ? half : 0);
      b.zeros[n * b.k_blocks + kb] = static_cast<uint8_t>(z);
      b.symmetric = b.symmetric && z == half;
    }
  return b;
}

}  // namespace octet::quant
