// Blocked RTN weight quantization (src/quant/block_quant.h) and its two export forms.
#include <gtest/gtest.h>

#include <cmath>

#include "quant/block_quant.h"

namespace octet {
namespace {

std::vector<float> values(int64_t K, int64_t N, uint32_t seed) {
  std::vector<float> w(static_cast<size_t>(K * N));
  uint64_t s = seed * 2654435761ull + 1;
  for (float& x : w) s = s * 6364136223846793005ull + 1442695040888963407ull, x = static_cast<float>(s >> 40) / (1 << 23) - 1.0f;
  return w;
}

TEST(QuantBlockQuant, RoundingStaysWithinHalfAStep) {
  const int64_t K = 75, N = 6;  // a tail block of 11
  const std::vector<float> w = values(K, N, 1);
  for (int bits : {4, 8})
    for (bool sym : {true, false}) {
      const quant::BlockQuantized q = quant::quantize_blocks_rtn(w.data(), K, N, bits, 32, sym);
      ASSERT_EQ(q.k_blocks, 3);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) {
          const float s = std::fabs(q.scales[n * q.k_blocks + k / 32]);  // symmetric scales may be negative
          // Half a step, except where symmetric rounding hits the clamp at 2^(bits-1) - 1: the
          // largest magnitude sits on -2^(bits-1), so values near its opposite can lose one step.
          const float steps = std::fabs(w[k * N + n] / s);
          const float bound = sym && steps > static_cast<float>((1 << (bits - 1)) - 1) + 0.5f ? s : 0.5f * s;
          EXPECT_LE(std::fabs(quant::dequantized(q, k, n) - w[k * N + n]), bound * 1.0001f) << bits << sym << k;
        }
    }
}

TEST(QuantBlockQuant, SymmetricPutsTheLargestMagnitudeOnTheLowestCode) {
  std::vector<float> w = {0.5f, -2.0f, 1.0f, 0.0f};  // K = 4, N = 1
  const quant::BlockQuantized q = quant::quantize_blocks_rtn(w.data(), 4, 1, 4, 16, true);
  EXPECT_FLOAT_EQ(q.scales[0], 0.25f);  // -2 / -8
  EXPECT_EQ(q.codes[1], 0);             // -2 -> -8 -> code 0
  EXPECT_EQ(q.zeros[0], 8);
  EXPECT_FLOAT_EQ(quant::dequantized(q, 2, 0), 1.0f);
  // An all-zero block: scale 1, every code on the zero point.
  std::vector<float> z(16, 0.0f);
  const quant::BlockQuantized zq = quant::quantize_blocks_rtn(z.data(), 16, 1, 4, 16, false);
  EXPECT_EQ(zq.scales[0], 1.0f);
  EXPECT_EQ(zq.codes[3], zq.zeros[0]);
}

TEST(QuantBlockQuant, BlockedDqRoundTripsAndNbitsPacksLowNibbleFirst) {
  const int64_t K = 40, N = 3;
  const std::vector<float> w = values(K, N, 2);
  for (int bits : {4, 8})
    for (bool sym : {true, false}) {
      const quant::BlockQuantized q = quant::quantize_blocks_rtn(w.data(), K, N, bits, 16, sym);
      const quant::BlockedDq dq = quant::to_blocked_dq(q);
      EXPECT_EQ(dq.q.dtype(), bits == 4 ? (sym ? DType::Int4 : DType::UInt4) : (sym ? DType::Int8 : DType::UInt8));
      EXPECT_EQ(dq.zero_points.has_value(), !sym);
      auto back = quant::from_blocked_dq(dq.q, dq.scales, dq.zero_points ? &*dq.zero_points : nullptr, 16);
      ASSERT_TRUE(back);
      EXPECT_EQ(back->codes, q.codes);
      EXPECT_EQ(back->scales, q.scales);
      EXPECT_EQ(back->zeros, q.zeros);
      EXPECT_EQ(back->symmetric, sym);
      const quant::NbitsTensors nb = quant::to_matmul_nbits(q);
      EXPECT_EQ(nb.b.shape(), (std::vector<int64_t>{N, 3, 16 * bits / 8}));
      EXPECT_EQ(nb.zero_points.has_value(), !sym);
      const uint8_t first = nb.b.raw()[0];
      if (bits == 4) EXPECT_EQ(first, q.codes[0] | (q.codes[1] << 4));
      else EXPECT_EQ(first, q.codes[0]);
    }
}

}  // namespace
}  // namespace octet
