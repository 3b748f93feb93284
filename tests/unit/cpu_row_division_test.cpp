// The QAttention tasks' division of outputs by their row sums through the row's reciprocal
// (kernels/cpu/row_division_avx512.h) against the division itself, bit for bit: every
// mantissa of x for divisors picked to be hard (powers of two, all-ones mantissas, runs of
// ones, near 1 and near 2) and random ones, x at exponents across the range the callers
// allow, random outputs shaped like the tasks' (scale * integer over a P sum), zeros of
// both signs, and the fallback to the division outside the conditions (NaN, Inf, zero,
// subnormal and out-of-range sums and scales).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu/row_division.h"
#include "kernels/dispatch/cpu_features.h"

namespace octet::testing {
namespace {

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
float from_bits(uint32_t b) { return std::bit_cast<float>(b); }

bool have_avx512() { return active_isa() == IsaLevel::Avx512; }

// Divides x by d both ways; returns how many quotients differ in any bit (NaNs: only
// NaN-ness compared; the fallback is VDIVPS itself) and whether the reciprocal was taken.
int64_t mismatches(const std::vector<float>& x, float d, float scale, bool* reciprocal = nullptr) {
  std::vector<float> q(x.size());
  const bool r = cpu::divide_row_avx512(x.data(), static_cast<int64_t>(x.size()), d, scale, q.data());
  if (reciprocal) *reciprocal = r;
  int64_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = x[i] / d;
    if (std::isnan(want) ? !std::isnan(q[i]) : bits(q[i]) != bits(want)) ++bad;
  }
  return bad;
}

// Divisors with mantissas known to be hard for division by reciprocal, at exponent 0.
std::vector<float> hard_mantissas() {
  std::vector<float> d;
  for (uint32_t k = 0; k < 8; ++k) d.push_back(from_bits(0x3f800000u + k));     // 1 and just above
  for (uint32_t k = 0; k < 8; ++k) d.push_back(from_bits(0x3fffffffu - k));     // all ones, just below 2
  for (int n = 1; n < 23; n += 3) d.push_back(from_bits(0x3f800000u | ((1u << n) - 1)));  // trailing ones
  for (int n = 1; n < 23; n += 3) d.push_back(from_bits(0x3fffffffu & ~((1u << n) - 1)));  // leading ones
  d.push_back(1.5f);
  d.push_back(3.0f / 2.0f + 0x1p-23f);
  std::mt19937 rng(20);
  for (int k = 0; k < 12; ++k) d.push_back(from_bits(0x3f800000u | (rng() & 0x7fffffu)));
  return d;
}

TEST(RowDivision, EveryMantissaOfXForHardDivisors) {
  if (!have_avx512()) GTEST_SKIP() << "no AVX-512";
  std::vector<float> x(1u << 23);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> exp_x(-60, 58), exp_d(-1, 23);
  for (float mant : hard_mantissas()) {
    // x over one whole binade (every mantissa), signed, at a random exponent; d scaled too.
    const int ex = exp_x(rng);
    const float sign = rng() & 1 ? -1.0f : 1.0f;
    const uint32_t top = (sign < 0 ? 0x80000000u : 0u) | static_cast<uint32_t>(127 + ex) << 23;
    for (uint32_t m = 0; m < x.size(); ++m) x[m] = from_bits(top | m);
    const float d = std::ldexp(mant, exp_d(rng));
    bool reciprocal = false;
    EXPECT_EQ(mismatches(x, d, 1.0f, &reciprocal), 0) << "d = " << d << ", x exponent " << ex;
    EXPECT_TRUE(reciprocal);
  }
}

TEST(RowDivision, RandomOutputsLikeTheTasks) {
  if (!have_avx512()) GTEST_SKIP() << "no AVX-512";
  // out_scale * float(int32 sum) over a P sum in [1, Sk]: scales over the whole allowed
  // range, sums from one key's 1 to millions, integers small and near 2^31.
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> unit(1.0f, 2.0f);
  std::uniform_int_distribution<int> exp_scale(-60, 27), exp_d(-1, 23), exp_n(0, 31);
  std::vector<float> x(4096);
  int64_t bad = 0;
  for (int rep = 0; rep < 3000; ++rep) {
    const float scale = std::ldexp(unit(rng), exp_scale(rng)) * (rng() & 1 ? -1.0f : 1.0f);
    const float d = rep % 4 == 0 ? 1.0f + static_cast<float>(rng() % 4096) : std::ldexp(unit(rng), exp_d(rng));
    for (float& v : x) {
      const int64_t n = static_cast<int64_t>(rng() & ((uint64_t{1} << exp_n(rng)) - 1)) - (rng() & 1 ? (1ll << 30) : 0);
      v = scale * static_cast<float>(static_cast<int32_t>(n));
    }
    bool reciprocal = false;
    bad += mismatches(x, d, scale, &reciprocal);
    ASSERT_TRUE(reciprocal) << "scale " << scale << " d " << d;
  }
  EXPECT_EQ(bad, 0);
}

TEST(RowDivision, ZerosAndRangeEdges) {
  if (!have_avx512()) GTEST_SKIP() << "no AVX-512";
  const std::vector<float> x = {0.0f,          -0.0f,         0x1p-60f,      -0x1p-60f,    0x1.fffffep58f,
                                -0x1.fffffep58f, 0x1p59f,     0x1.000002p-60f, 1.0f,        3.0f,
                                0x1.fffffep0f, 0x1.000002p0f, 7.0f,          1e-10f,       -123456.7f,
                                0x1.fffffep-1f, 0x1p-59f};
  for (float d : {0.5f, 0x1.000002p-1f, 1.0f, 0x1.fffffep0f, 3.0f, 0x1p24f, 0x1.fffffep23f, 12345.678f}) {
    bool reciprocal = false;
    EXPECT_EQ(mismatches(x, d, 1.0f, &reciprocal), 0) << "d = " << d;
    EXPECT_TRUE(reciprocal) << "d = " << d;
    // -0 / d keeps its sign.
    std::vector<float> q(1);
    const float mz = -0.0f;
    cpu::divide_row_avx512(&mz, 1, d, 1.0f, q.data());
    EXPECT_TRUE(std::signbit(q[0]));
  }
}

TEST(RowDivision, FallsBackToTheDivisionOutsideItsConditions) {
  if (!have_avx512()) GTEST_SKIP() << "no AVX-512";
  const std::vector<float> x = {0.0f, -0.0f, 1.0f, -3.0f, 0x1p59f, 0x1p-60f, 1e30f, 1e-40f, INFINITY, NAN, 0x1p-149f};
  const float inf = INFINITY, nan = NAN;
  for (float d : {nan, inf, -inf, 0.0f, -0.0f, 0x1p-149f, 0x1.fffffep-2f, 0x1.000002p24f, 1e30f, -1.0f}) {
    bool reciprocal = true;
    EXPECT_EQ(mismatches(x, d, 1.0f, &reciprocal), 0) << "d = " << d;
    EXPECT_FALSE(reciprocal) << "d = " << d;
  }
  for (float scale : {nan, inf, 0.0f, 0x1.fffffep-61f, 0x1.000002p28f, 1e-30f, -1e20f}) {
    bool reciprocal = true;
    EXPECT_EQ(mismatches(x, 3.0f, scale, &reciprocal), 0) << "scale = " << scale;
    EXPECT_FALSE(reciprocal) << "scale = " << scale;
  }
  // In range: both bounds are inclusive.
  bool reciprocal = false;
  mismatches({1.0f}, 3.0f, -0x1p-60f, &reciprocal);
  EXPECT_TRUE(reciprocal);
  mismatches({1.0f}, 3.0f, 0x1p28f, &reciprocal);
  EXPECT_TRUE(reciprocal);
}

}  // namespace
}  // namespace octet::testing
