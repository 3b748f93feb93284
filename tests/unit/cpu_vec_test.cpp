// The row helpers of kernels/cpu/vec_ops.h: ISA dispatch, and the accuracy of the fast
// exp/tanh/erf/sigmoid/GeLU against double-precision libm at every ISA level.
//
// Bounds tested (relative to the double result, with an absolute floor for results
// near 0, where a float reference itself is only good to ~1e-7 absolute):
//   exp, sigmoid  rel 1e-6 on [-87, 88] (results down to 1e-38)
//   tanh, erf     rel 1e-6, abs floor 1e-7 (the value of ~1 ulp at 1)
//   GeLU          rel 1e-6, abs floor 1e-7 * max(1, |x|) (0.5*x*(1+erf) loses the rest to
//                 cancellation for x << 0, in the float reference as much as here)
//   GeLU fast     (octet.QMatMul's epilogue) rel 1e-6, abs floor 2e-7 * max(1, |x|) here;
//                 2e-7 * |x| (relative to x near 0) over a sweep of all floats and the
//                 segment edges of its piecewise polynomial (GeluFastBoundOverAllFloats)
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/quant_ops.h"
#include "kernels/cpu/vec_ops.h"

namespace octet::cpu {
namespace {

TEST(CpuVecOps, DispatchHonoursScopedIsaLevel) {
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    EXPECT_EQ(active_isa(), level);
    EXPECT_STREQ(vec_ops().name, isa_name(level));
    EXPECT_EQ(&vec_ops(), &vec_table(level));
  }
  // Levels differ in their functions, not just their names.
  const std::vector<IsaLevel> levels = available_isas();
  for (size_t i = 1; i < levels.size(); ++i)
    EXPECT_NE(vec_table(levels[i]).softmax_row, vec_table(levels[i - 1]).softmax_row);
}

std::vector<float> dense_range(float lo, float hi, int count) {
  std::vector<float> x(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) x[static_cast<size_t>(i)] = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(count - 1);
  return x;
}

double gelu_erf_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_ref(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

struct Case {
  UnaryOp op;
  const char* name;
  double (*ref)(double);
  float lo, hi;
  double atol;
  bool atol_scales_with_x;
};

TEST(CpuVecOps, FastMathAccuracyAtEveryIsa) {
  const Case cases[] = {
      {UnaryOp::Exp, "exp", [](double x) { return std::exp(x); }, -87.0f, 88.0f, 0, false},
      {UnaryOp::Sigmoid, "sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -87.0f, 30.0f, 0, false},
      {UnaryOp::Tanh, "tanh", [](double x) { return std::tanh(x); }, -12.0f, 12.0f, 1e-7, false},
      {UnaryOp::Erf, "erf", [](double x) { return std::erf(x); }, -6.0f, 6.0f, 1e-7, false},
      {UnaryOp::GeluErf, "gelu", gelu_erf_ref, -10.0f, 10.0f, 1e-7, true},
      {UnaryOp::GeluTanh, "gelu_tanh", gelu_tanh_ref, -10.0f, 10.0f, 1e-7, true},
      // octet.QMatMul's faster GeLU (piecewise polynomial): the documented 2e-7 max(1, |x|).
      {UnaryOp::GeluErfFast, "gelu_fast", gelu_erf_ref, -10.0f, 10.0f, 2e-7, true},
  };
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    for (const Case& c : cases) {
      // 200003 points: odd, so every vector width leaves a tail.
      std::vector<float> x = dense_range(c.lo, c.hi, 200003);
      for (float tiny : {1e-30f, -1e-20f, 1e-7f, -3e-4f, 0.0f}) x.push_back(tiny);
      std::vector<float> y(x.size());
      unary(c.op, x.data(), y.data(), static_cast<int64_t>(x.size()));
      double worst = 0, worst_x = 0;
      int bad = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const double want = c.ref(x[i]);
        const double floor = c.atol * (c.atol_scales_with_x ? std::max(1.0, std::fabs(double{x[i]})) : 1.0);
        const double err = std::fabs(y[i] - want);
        const double rel = err / std::max(std::fabs(want), floor > 0 ? floor / 1e-6 : 1e-300);
        if (rel > worst) worst = rel, worst_x = x[i];
        if (err > 1e-6 * std::fabs(want) + floor && bad++ < 3)
          ADD_FAILURE() << c.name << " at " << isa_name(level) << ": x=" << x[i] << " got " << y[i] << " want " << want;
      }
      std::printf("[ accuracy ] %-9s %-7s max error %.3g at x = %.6g (relative, floor as documented)\n", c.name,
                  isa_name(level), worst, worst_x);
    }
  }
}

TEST(CpuVecOps, SpecialValues) {
  const float inf = INFINITY, nan = NAN;
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    const std::vector<float> x = {inf, -inf, nan, 89.0f, -110.0f, -100.0f, 0.0f, -0.0f, 88.5f};
    std::vector<float> y(x.size());
    exp(x.data(), y.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(y[0], inf);
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_TRUE(std::isnan(y[2]));
    EXPECT_EQ(y[3], inf);
    EXPECT_EQ(y[4], 0.0f);
    EXPECT_NEAR(y[5], std::exp(-100.0), 2e-45);  // subnormal result kept
    EXPECT_EQ(y[6], 1.0f);
    EXPECT_EQ(y[7], 1.0f);
    EXPECT_NEAR(y[8], std::exp(88.5), 1e-6 * std::exp(88.5));
    unary(UnaryOp::Tanh, x.data(), y.data(), 3);
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[1], -1.0f);
    EXPECT_TRUE(std::isnan(y[2]));
    unary(UnaryOp::Erf, x.data(), y.data(), 3);
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[1], -1.0f);
    EXPECT_TRUE(std::isnan(y[2]));
    unary(UnaryOp::Sigmoid, x.data(), y.data(), 3);
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_TRUE(std::isnan(y[2]));
    const std::vector<float> r = {nan, -0.0f, -2.0f, 3.0f};
    std::vector<float> ry(r.size());
    unary(UnaryOp::Relu, r.data(), ry.data(), 4);
    EXPECT_TRUE(std::isnan(ry[0]));
    EXPECT_TRUE(std::signbit(ry[1]));
    EXPECT_EQ(ry[2], 0.0f);
    EXPECT_EQ(ry[3], 3.0f);
  }
}

// octet.QMatMul's fast GeLU on the edges, against the reference GeLU (GeluErf) at each ISA:
// zeros and tiny values keep x / 2 (relative, where an absolute bound would allow 0), the
// large positive side is x, the large negative side 0 (not a leftover of erfc's fit times a
// huge h), and infinities and NaN come out as the reference gives them.
TEST(CpuVecOps, GeluFastEdgeValuesAsTheReferenceGelu) {
  const float inf = INFINITY, nan = NAN;
  const std::vector<float> x = {0.0f, -0.0f, 1e-45f, -1e-45f, 1e-38f, -1e-38f, 1e-30f, -1e-30f, 1e-7f, -1e-7f, 1.0f,
                                -1.0f, 5.0f, -5.0f, 9.0f, -9.0f, 12.0f, -12.0f, 13.0f, -13.0f, 20.0f, -20.0f, 1e4f,
                                -1e4f, 1e20f, -1e20f, 3e38f, -3e38f, inf, -inf, nan, -nan};
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    std::vector<float> fast(x.size()), ref(x.size());
    unary(UnaryOp::GeluErfFast, x.data(), fast.data(), static_cast<int64_t>(x.size()));
    unary(UnaryOp::GeluErf, x.data(), ref.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      char at[64];
      std::snprintf(at, sizeof at, "%s x=%g", isa_name(level), double{x[i]});
      if (std::isnan(ref[i]) || std::isinf(ref[i])) {
        EXPECT_TRUE(std::isnan(ref[i]) ? std::isnan(fast[i]) : fast[i] == ref[i]) << at << " got " << fast[i] << " want " << ref[i];
        continue;
      }
      const double want = gelu_erf_ref(x[i]);
      if (std::fabs(x[i]) < 1e-6f) {  // 0.5 x (1 + x sqrt(2/pi) / 2 + ...): x / 2 to float rounding
        EXPECT_LE(std::fabs(fast[i] - want), 1e-6 * std::fabs(want) + 0x1p-150) << at << " got " << fast[i];
      } else {
        EXPECT_LE(std::fabs(fast[i] - want), 2e-7 * std::max(1.0, std::fabs(double{x[i]}))) << at << " got " << fast[i];
      }
      if (x[i] <= -13.0f) {
        EXPECT_LE(std::fabs(fast[i]), 1e-30f) << at << " got " << fast[i];
      }
    }
  }
}

// The fast GeLU is a polynomial per segment of x / 0.375 (gelu_table.h), so its error is
// bounded where the fit was checked only if the segment choice and the clamp are right for
// every float: this sweeps the whole float line (every 509th bit pattern, both signs, from
// denormals to FLT_MAX) plus the floats around each segment edge (n + 1/2) * 0.375 and the
// clamp bounds, where a rounding of x / 0.375 picks either neighbour, and bounds the error
// against double-precision GeLU by 2e-7 |x| + 1e-6 |GeLU| (+ half the smallest subnormal):
// relative to x near 0, 2e-7 max(1, |x|) above 1 as the other GeLU bounds. Measured 2.03e-7 |x|
// at worst (bench/gelu_table_fit.py's float emulation agrees).
TEST(CpuVecOps, GeluFastBoundOverAllFloats) {
  std::vector<float> x;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 509) {
    const float v = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (std::isfinite(v)) x.push_back(v);
  }
  for (int n = -18; n <= 17; ++n) {
    float edge = (static_cast<float>(n) + 0.5f) * 0.375f;
    for (int k = 0; k < 4; ++k) edge = std::nextafter(edge, -INFINITY);
    for (int k = 0; k < 9; ++k, edge = std::nextafter(edge, INFINITY)) x.push_back(edge);
  }
  for (float b : {-6.18375f, 5.80875f, -5.8125f, 5.4375f, 0x1p-149f, -0x1p-149f, 0x1p-126f, -0x1p-126f, 0.0f, -0.0f}) {
    float v = std::nextafter(std::nextafter(b, -INFINITY), -INFINITY);
    for (int k = 0; k < 5; ++k, v = std::nextafter(v, INFINITY)) x.push_back(v);
  }
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    std::vector<float> y(x.size());
    unary(UnaryOp::GeluErfFast, x.data(), y.data(), static_cast<int64_t>(x.size()));
    double worst = 0, worst_x = 0;
    int bad = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double xi = x[i], want = 0.5 * xi * std::erfc(-xi / std::sqrt(2.0));
      const double err = std::fabs(y[i] - want), bound = 2e-7 * std::fabs(xi) + 1e-6 * std::fabs(want) + 0x1p-150;
      if (std::fabs(xi) > 1e-30 && err / std::fabs(xi) > worst) worst = err / std::fabs(xi), worst_x = xi;
      if (!(err <= bound) && bad++ < 5)
        ADD_FAILURE() << isa_name(level) << ": x=" << x[i] << " got " << y[i] << " want " << want;
    }
    std::printf("[ accuracy ] gelu_fast %-7s max |error| / |x| %.3g at x = %.6g (|x| > 1e-30) over %zu floats\n", isa_name(level), worst,
                worst_x, x.size());
  }
}

// softmax_rows with strides and a scale, as a fused attention kernel calls it; rows of
// -inf entries (masked keys) contribute exactly 0.
TEST(CpuVecOps, SoftmaxRowsWithStridesAndScale) {
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    for (int64_t cols : {1, 7, 8, 15, 16, 17, 33, 70, 129}) {
      const int64_t rows = 3, xs = cols + 5, ys = cols + 2;
      std::vector<float> x(static_cast<size_t>(rows * xs)), y(static_cast<size_t>(rows * ys), 42.0f);
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)) * 6);
      if (cols > 2) x[static_cast<size_t>(xs + 1)] = -INFINITY;
      const float scale = 0.125f;
      softmax_rows(x.data(), y.data(), rows, cols, xs, ys, scale);
      for (int64_t r = 0; r < rows; ++r) {
        double mx = -INFINITY, sum = 0;
        for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, double{x[r * xs + c]} * scale);
        for (int64_t c = 0; c < cols; ++c) sum += std::exp(double{x[r * xs + c]} * scale - mx);
        for (int64_t c = 0; c < cols; ++c) {
          const double want = std::exp(double{x[r * xs + c]} * scale - mx) / sum;
          EXPECT_NEAR(y[r * ys + c], want, 1e-6 * want + 1e-12) << isa_name(level) << " cols " << cols;
        }
        for (int64_t c = cols; c < ys; ++c) EXPECT_EQ(y[r * ys + c], 42.0f) << "wrote past the row";
      }
      if (cols > 2) {
        EXPECT_EQ(y[static_cast<size_t>(ys + 1)], 0.0f);
      }
    }
  }
}

// exp_sum, softmax's exp: accurate as exp on [-87, 0], exactly 0 (never subnormal) below
// exp(-87), NaN kept, and the sum over ragged lengths (tail lanes add nothing).
TEST(CpuVecOps, ExpSumFlushesBelowFloatMinAndSums) {
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    for (int64_t n : {1, 5, 16, 17, 197, 1000}) {
      std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n) + 3, 42.0f);
      for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = -95.0f * static_cast<float>(i) / static_cast<float>(n);
      const float scale = 1.0f, shift = 0.0f;
      const float got_sum = exp_sum(x.data(), scale, shift, y.data(), n);
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double want = std::exp(double{x[static_cast<size_t>(i)]});
        const float yi = y[static_cast<size_t>(i)];
        if (x[static_cast<size_t>(i)] < -87.0f) {
          EXPECT_EQ(yi, 0.0f) << isa_name(level) << " x " << x[static_cast<size_t>(i)];
        } else {
          EXPECT_NEAR(yi, want, 1e-6 * want) << isa_name(level) << " x " << x[static_cast<size_t>(i)];
          sum += want;
        }
        EXPECT_NE(std::fpclassify(yi), FP_SUBNORMAL);
      }
      EXPECT_NEAR(got_sum, sum, 1e-6 * sum) << isa_name(level) << " n " << n;
      for (size_t i = static_cast<size_t>(n); i < y.size(); ++i) EXPECT_EQ(y[i], 42.0f) << "wrote past the row";
    }
    // Scale and shift as softmax passes them; -inf (a masked score) gives 0, NaN stays NaN.
    const std::vector<float> x = {2.0f, -INFINITY, 4.0f, -1e30f, NAN};
    std::vector<float> y(x.size());
    const float s = exp_sum(x.data(), 0.5f, 2.0f, y.data(), 4);
    EXPECT_NEAR(y[0], std::exp(-1.0), 1e-7);
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_EQ(y[2], 1.0f);
    EXPECT_EQ(y[3], 0.0f);
    EXPECT_NEAR(s, 1.0 + std::exp(-1.0), 1e-6);
    exp_sum(x.data(), 1.0f, 0.0f, y.data(), 5);
    EXPECT_TRUE(std::isnan(y[4])) << isa_name(level);
  }
}

TEST(CpuVecOps, ReductionsAndNormRows) {
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    for (int64_t n : {0, 1, 5, 8, 16, 31, 64, 65, 4099}) {
      std::vector<float> x(static_cast<size_t>(n));
      double sum = 0, mx = -INFINITY;
      for (int64_t i = 0; i < n; ++i) {
        x[static_cast<size_t>(i)] = static_cast<float>(std::cos(1.3 * static_cast<double>(i)) * 2 + 0.5);
        sum += x[static_cast<size_t>(i)];
        mx = std::max(mx, double{x[static_cast<size_t>(i)]});
      }
      EXPECT_NEAR(sum_of(x.data(), n), sum, 1e-5 * (1 + std::fabs(sum)));
      EXPECT_EQ(max_of(x.data(), n), static_cast<float>(mx));
    }
  }
}

// norm_row2 (one row normalized into two affine forms, or one, the first one's range on the way):
// each output the same bits as norm_row with its gamma / beta, the range min_max's.
TEST(CpuVecOps, NormRow2IsTwoNormRowsAndTheRange) {
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    const VecTable& t = vec_ops();
    const QuantTable& q = quant_ops();
    for (int64_t n : {1, 5, 16, 17, 384, 1537})
      for (bool beta : {true, false}) {
        std::vector<float> x(n), g1(n), b1(n), g2(n), b2(n);
        for (int64_t i = 0; i < n; ++i) {
          x[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)) * 3 + 0.25);
          g1[i] = static_cast<float>(1.5 + std::cos(0.3 * static_cast<double>(i)));
          b1[i] = static_cast<float>(0.1 * std::sin(1.1 * static_cast<double>(i)));
          g2[i] = 0.9f + 0.001f * static_cast<float>(i % 7);
          b2[i] = -0.05f * static_cast<float>(i % 3);
        }
        std::vector<float> want1(n), want2(n), got1(n, -1.0f), got2(n, -1.0f);
        t.norm_row(x.data(), want1.data(), n, g1.data(), beta ? b1.data() : nullptr, 1e-5f, true);
        t.norm_row(x.data(), want2.data(), n, g2.data(), beta ? b2.data() : nullptr, 1e-5f, true);
        float mn = 7, mx = -7, want_mn = 0, want_mx = 0;
        t.norm_row2(x.data(), n, 1e-5f, {g1.data(), beta ? b1.data() : nullptr, got1.data()},
                    {g2.data(), beta ? b2.data() : nullptr, got2.data()}, &mn, &mx);
        q.min_max(want1.data(), n, &want_mn, &want_mx);
        const std::string where = std::string(t.name) + " n " + std::to_string(n) + (beta ? " beta" : "");
        EXPECT_EQ(std::memcmp(got1.data(), want1.data(), n * sizeof(float)), 0) << where;
        EXPECT_EQ(std::memcmp(got2.data(), want2.data(), n * sizeof(float)), 0) << where;
        EXPECT_EQ(mn, want_mn) << where;
        EXPECT_EQ(mx, want_mx) << where;
        std::fill(got1.begin(), got1.end(), -1.0f);
        t.norm_row2(x.data(), n, 1e-5f, {g1.data(), beta ? b1.data() : nullptr, got1.data()},
                    {g2.data(), beta ? b2.data() : nullptr, got2.data()}, nullptr, nullptr);  // no range asked
        EXPECT_EQ(std::memcmp(got1.data(), want1.data(), n * sizeof(float)), 0) << where << " without range";
        // No second output (QMatMul's LayerNorm epilogue writing only Q): norm_row's row and
        // the range, nothing else written.
        std::fill(got1.begin(), got1.end(), -1.0f);
        mn = 7, mx = -7;
        t.norm_row2(x.data(), n, 1e-5f, {g1.data(), beta ? b1.data() : nullptr, got1.data()},
                    {nullptr, nullptr, nullptr}, &mn, &mx);
        EXPECT_EQ(std::memcmp(got1.data(), want1.data(), n * sizeof(float)), 0) << where << " first only";
        EXPECT_EQ(mn, want_mn) << where << " first only";
        EXPECT_EQ(mx, want_mx) << where << " first only";
      }
  }
}

}  // namespace
}  // namespace octet::cpu
