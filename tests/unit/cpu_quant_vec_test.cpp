// The int8 row helpers (src/kernels/cpu/quant_ops.h) at every ISA level against their
// scalar definitions: integers bit for bit (ties to even, saturation, NaN, infinities,
// every tail length), the float epilogue to a few ulp (FMA or not).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/quant_ops.h"
#include "kernels/cpu/vec_ops.h"

namespace octet {
namespace {

// Values that exercise rounding: ties (k + 0.5) * scale, saturation, NaN and infinities.
std::vector<float> tricky_values(int64_t n, float scale, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = seed * 2654435761u + 1;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    const int kind = static_cast<int>(s >> 28);
    const float r = static_cast<float>((s >> 8) & 0xFFFF) / 65536.0f;
    if (kind == 0) v[i] = (static_cast<float>(static_cast<int>(r * 300) - 150) + 0.5f) * scale;  // a tie
    else if (kind == 1) v[i] = std::numeric_limits<float>::quiet_NaN();
    else if (kind == 2) v[i] = (s & 1) ? INFINITY : -INFINITY;
    else v[i] = (r * 2 - 1) * 200 * scale;
  }
  return v;
}

uint8_t quantize_def(float x, float scale, int32_t zp, int32_t lo, int32_t hi) {
  const float q = x / scale;
  if (std::isnan(q)) return static_cast<uint8_t>(std::clamp(zp, lo, hi));
  return static_cast<uint8_t>(static_cast<int32_t>(std::clamp(std::nearbyint(static_cast<double>(q)) + zp,
                                                              static_cast<double>(lo), static_cast<double>(hi))));
}

TEST(CpuQuantVec, QuantizeRoundsHalfToEvenAndSaturatesLikeOnnx) {
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    const cpu::QuantTable& t = cpu::quant_ops();
    for (int64_t n : {0, 1, 7, 8, 15, 16, 17, 33, 100})
      for (auto [zp, lo, hi] : {std::tuple<int32_t, int32_t, int32_t>{0, 0, 255}, {131, 0, 255}, {0, -128, 127},
                                {-3, -128, 127}, {300, 0, 255}})
        for (float scale : {0.1f, 1.9f / 255.0f, 0.25f}) {
          const std::vector<float> x = tricky_values(n, scale, static_cast<uint32_t>(n + zp));
          std::vector<uint8_t> got(static_cast<size_t>(n) + 1, 0xAB);
          t.quantize(x.data(), n, scale, zp, lo, hi, got.data());
          for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(got[i], quantize_def(x[i], scale, zp, lo, hi))
                << t.name << " n " << n << " i " << i << " x " << x[i] << " scale " << scale << " zp " << zp;
          EXPECT_EQ(got[n], 0xAB) << t.name << ": wrote past the end";
        }
  }
}

// The SIMD levels multiply by 1 / scale and divide only vectors with a lane near a
// half-integer (quant_impl.h): every float within 12 ulps of each (k + 1/2) * scale, where
// the product and the quotient could round apart, and of each integer, at scales whose
// inverse is normal and not (every vector divided), must give the quotient's integers.
TEST(CpuQuantVec, QuantizeByInverseRoundsAsTheQuotientNearHalves) {
  std::vector<float> x;
  const std::vector<float> scales = {0.1f, 1.0f / 3.0f, 1.9f / 255.0f, 7.3e-3f, 0.9999999f, 3.0f, 1e-30f,
                                     1e-39f /* subnormal */, 2e38f /* subnormal inverse */};
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    const cpu::QuantTable& t = cpu::quant_ops();
    for (float scale : scales)
      for (auto [zp, lo, hi] : {std::tuple<int32_t, int32_t, int32_t>{0, -128, 127}, {131, 0, 255}}) {
        x.clear();
        for (int k = -140; k <= 140; ++k)
          for (double at : {k + 0.5, static_cast<double>(k)}) {
            const float c = static_cast<float>(at * static_cast<double>(scale));
            float up = c, down = c;
            for (int u = 0; u < 12; ++u) {
              x.push_back(up);
              x.push_back(down);
              up = std::nextafter(up, INFINITY);
              down = std::nextafter(down, -INFINITY);
            }
          }
        std::vector<uint8_t> got(x.size());
        t.quantize(x.data(), static_cast<int64_t>(x.size()), scale, zp, lo, hi, got.data());
        for (size_t i = 0; i < x.size(); ++i)
          ASSERT_EQ(got[i], quantize_def(x[i], scale, zp, lo, hi))
              << t.name << " x " << x[i] << " scale " << scale << " zp " << zp << " quotient " << x[i] / scale;
      }
  }
}

TEST(CpuQuantVec, RangeScansSkipNaNAndIncludeZero) {
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    const cpu::QuantTable& t = cpu::quant_ops();
    for (int64_t n : {0, 1, 5, 16, 19, 64, 77}) {
      std::vector<float> x = tricky_values(n, 0.01f, static_cast<uint32_t>(n));
      for (float& v : x)
        if (std::isinf(v)) v = 1.5f;
      float mn = 0, mx = 0, amax = 0;
      for (float v : x) {
        if (std::isnan(v)) continue;
        mn = std::min(mn, v);
        mx = std::max(mx, v);
        amax = std::max(amax, std::fabs(v));
      }
      float got_mn = 7, got_mx = 7;
      t.min_max(x.data(), n, &got_mn, &got_mx);
      EXPECT_EQ(got_mn, mn) << t.name << " n " << n;
      EXPECT_EQ(got_mx, mx) << t.name << " n " << n;
      EXPECT_FALSE(std::signbit(got_mn) && got_mn == 0) << t.name << ": min of positives must be +0";
      EXPECT_EQ(t.abs_max(x.data(), n), amax) << t.name << " n " << n;
    }
    const float pos[] = {1, 2, 3};
    float a = 0, b = 0;
    t.min_max(pos, 3, &a, &b);
    EXPECT_EQ(a, 0.0f);
    EXPECT_EQ(b, 3.0f);
  }
}

TEST(CpuQuantVec, DequantizeAndRequantize) {
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    const cpu::QuantTable& t = cpu::quant_ops();
    for (int64_t n : {0, 1, 8, 13, 16, 31, 40}) {
      std::vector<uint8_t> q(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) q[i] = static_cast<uint8_t>(i * 37 + 11);
      for (bool is_signed : {false, true}) {
        std::vector<float> y(static_cast<size_t>(n) + 1, -1.0f);
        t.dequantize(q.data(), n, is_signed, 7, 0.37f, y.data());
        for (int64_t i = 0; i < n; ++i) {
          const int v = is_signed ? static_cast<int8_t>(q[i]) : q[i];
          ASSERT_EQ(y[i], static_cast<float>(v - 7) * 0.37f) << t.name << " i " << i;
        }
        EXPECT_EQ(y[n], -1.0f);
      }
      // Requantize: products landing on and near ties; per-column multipliers and zero points.
      std::vector<int32_t> acc(static_cast<size_t>(n));
      std::vector<double> mult(static_cast<size_t>(n)), zp(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        acc[i] = static_cast<int32_t>((i * 7919) % 4001) - 2000;
        mult[i] = i % 3 == 0 ? 0.5 : static_cast<double>(static_cast<float>(0.0123f * (i + 1)));
        zp[i] = static_cast<double>(i % 5) - 2;
      }
      for (auto [lo, hi] : {std::pair<int32_t, int32_t>{0, 255}, {-128, 127}}) {
        std::vector<uint8_t> got(static_cast<size_t>(n) + 1, 0xCD);
        t.requantize(acc.data(), n, mult.data(), zp.data(), lo, hi, got.data());
        for (int64_t i = 0; i < n; ++i) {
          double v = std::nearbyint(static_cast<double>(acc[i]) * mult[i]) + zp[i];
          v = std::clamp(v, static_cast<double>(lo), static_cast<double>(hi));
          ASSERT_EQ(got[i], static_cast<uint8_t>(static_cast<int32_t>(v))) << t.name << " i " << i;
        }
        EXPECT_EQ(got[n], 0xCD);
      }
    }
  }
}

TEST(CpuQuantVec, ScaleRowIsTheFloatEpilogue) {
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    const cpu::QuantTable& t = cpu::quant_ops();
    for (int64_t n : {1, 9, 16, 35}) {
      std::vector<int32_t> acc(static_cast<size_t>(n)), colsum(static_cast<size_t>(n));
      std::vector<float> cs(static_cast<size_t>(n)), bias(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        acc[i] = static_cast<int32_t>(i * 100003 % 200001) - 100000;
        colsum[i] = static_cast<int32_t>(i * 37 % 501) - 250;
        cs[i] = 1e-4f * static_cast<float>(i + 1);
        bias[i] = 0.25f * static_cast<float>(i) - 1;
      }
      for (const float* b : {static_cast<const float*>(nullptr), static_cast<const float*>(bias.data())}) {
        std::vector<float> y(static_cast<size_t>(n) + 1, 9.0f);
        t.scale_row(acc.data(), colsum.data(), 131, 0.02f, cs.data(), b, y.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          const double want = 0.02 * cs[i] * static_cast<double>(acc[i] - 131 * colsum[i]) + (b ? b[i] : 0.0);
          EXPECT_NEAR(y[i], want, 1e-6 * (1 + std::fabs(want))) << t.name << " i " << i;
        }
        EXPECT_EQ(y[n], 9.0f);
      }
    }
  }
}

// The one-pass epilogue against its definition: scale_row, the GeLU row kernel, the
// output_scale product, the residual add and min_max run one after another at the same
// level. Bit for bit (QMatMul's outputs must not move), for every option combination,
// tail lengths around the vector width, and rows with NaN / infinities / large values.
TEST(CpuQuantVec, EpilogueRowIsTheRowKernelsInTurnBitForBit) {
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    const cpu::QuantTable& t = cpu::quant_ops();
    for (int64_t n : {1, 7, 8, 15, 16, 17, 31, 33, 1539}) {
      std::vector<int32_t> acc(static_cast<size_t>(n)), colsum(static_cast<size_t>(n));
      std::vector<float> cs(static_cast<size_t>(n)), bias(static_cast<size_t>(n)), os(static_cast<size_t>(n));
      const std::vector<float> residual = tricky_values(n, 0.05f, static_cast<uint32_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        acc[i] = static_cast<int32_t>(i * 100003 % 200001) - 100000;
        colsum[i] = static_cast<int32_t>(i * 37 % 501) - 250;
        cs[i] = 1e-4f * static_cast<float>(i % 97 + 1) * (i % 11 == 0 ? 300.0f : 1.0f);
        bias[i] = 0.25f * static_cast<float>(i % 13) - 1;
        os[i] = 0.1f + 0.013f * static_cast<float>(i % 17);
      }
      for (int act = 0; act < 3; ++act) {
        for (int opts = 0; opts < 16; ++opts) {
          const bool with_bias = opts & 1, with_os = opts & 2, with_res = opts & 4, range = opts & 8;
          cpu::EpilogueRow e{acc.data(), colsum.data(), 131, 0.02f, cs.data()};
          e.bias = with_bias ? bias.data() : nullptr;
          e.activation = act;
          e.out_scale = with_os ? os.data() : nullptr;
          e.residual = with_res ? residual.data() : nullptr;
          std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n) + 1, 9.0f);
          t.scale_row(e.acc, e.colsum, e.za, e.row_scale, e.col_scale, e.bias, want.data(), n);
          if (act == 1) cpu::unary(cpu::UnaryOp::GeluErfFast, want.data(), want.data(), n);
          if (act == 2) cpu::gelu(want.data(), want.data(), n, true);
          if (with_os) cpu::binary(cpu::BinaryOp::Mul, want.data(), os.data(), want.data(), n);
          if (with_res) cpu::add_bias(want.data(), residual.data(), want.data(), n);
          float mn = 7, mx = 7, want_mn = 0, want_mx = 0;
          t.epilogue_row(e, got.data(), n, range ? &mn : nullptr, range ? &mx : nullptr);
          ASSERT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * static_cast<size_t>(n)), 0)
              << t.name << " n " << n << " act " << act << " opts " << opts;
          EXPECT_EQ(got[n], 9.0f);
          if (range) {
            t.min_max(want.data(), n, &want_mn, &want_mx);
            EXPECT_EQ(std::memcmp(&mn, &want_mn, sizeof(float)), 0) << t.name << " n " << n;
            EXPECT_EQ(std::memcmp(&mx, &want_mx, sizeof(float)), 0) << t.name << " n " << n;
          } else {
            EXPECT_EQ(mn, 7.0f);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace octet
