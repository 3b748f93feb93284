// SmoothingSearch, the error estimate behind --smoothquant auto: hand-computed values on a
// 2-channel group, and the blocked, threaded estimate against a plain scalar one (every
// row, every weight quantized whole, products in double) on shapes with several column
// blocks, a ragged last block, a transposed Gemm weight, per-tensor weights and int8
// activations, and each of them with the input quantized per row (per-token groups).
#include <gtest/gtest.h>

#include <cmath>

#include "pass_test_util.h"
#include "quant/channel_stats.h"
#include "quant/quant_params.h"
#include "quant/smooth_search.h"

namespace octet::quant {
namespace {

using octet::testing::PassGraph;

Tensor values(std::vector<int64_t> shape, std::vector<float> v) {
  Tensor t(DType::Float32, std::move(shape));
  std::copy(v.begin(), v.end(), t.mutable_data<float>());
  return t;
}

// Deterministic values in [-1, 1) with a few channels 20x larger (LLM-like outliers).
Tensor noise(std::vector<int64_t> shape, uint64_t seed, bool outliers) {
  Tensor t(DType::Float32, std::move(shape));
  float* p = t.mutable_data<float>();
  const int64_t last = t.shape().back();
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<float>(static_cast<double>(s >> 40) / static_cast<double>(1ull << 23) - 1.0);
    if (outliers && i % last % 7 == 3) p[i] *= 20;
  }
  return t;
}

TEST(SmoothingSearch, HandComputedTwoChannelGroup) {
  // X = [[1, 3]] (one row), W = [[0.5], [1]]: y = 3.5.
  PassGraph b;
  b.input("x", DType::Float32, {1, 2});
  b.init("w", values({2, 1}, {0.5f, 1.0f}));
  b.node("MatMul", {"x", "w"}, {"y"}, {}, "");
  b.output("y");
  std::shared_ptr<Graph> g = b.done();
  const SmoothGroup group{"x", {"y_node"}, 2};
  ChannelStatsObserver stats("x", 2, 16);
  stats.observe(values({1, 2}, {1, 3}));
  const SmoothingSearch search(*g, group, stats, QuantizeOptions{});
  ASSERT_EQ(search.rows(), 1);
  // s = 1: X over [0, 3] in uint8 is exact (1 -> 85, 3 -> 255); W's channel scale 1/127
  // rounds 0.5 to 64/127 (63.5 ties to even): error (64/127 - 1/2)^2 = (1/254)^2.
  EXPECT_NEAR(search.error({}), 1.0 / (254.0 * 254.0), 1e-4 / (254.0 * 254.0));
  // s = (1, 2): X/s = [1, 1.5] still exact, s*W = [0.5, 2] on scale 2/127 gives 0.5 ->
  // 32 * 2/127 = 64/127 again: the same error.
  EXPECT_NEAR(search.error({1.0f, 2.0f}), 1.0 / (254.0 * 254.0), 1e-4 / (254.0 * 254.0));
  // s = (1, 0.5): X/s = [1, 6] on scale 6/255: 1 -> 42.5 -> 42 (ties to even) -> 42*6/255;
  // s*W = [0.5, 0.5] exact. y' = 0.5 * (42*6/255 + 6): error (0.5 * 3/255)^2.
  EXPECT_NEAR(search.error({1.0f, 0.5f}), std::pow(0.5 * 3.0 / 255.0, 2), 1e-4 * std::pow(0.5 * 3.0 / 255.0, 2));
}

TEST(SmoothingSearch, PerTokenGroupQuantizesEachRowOnItsOwnGrid) {
  // X = [[1, 3], [-0.3, 2]], W = [[0.5], [1]]: y = (3.5, 1.85). W's channel scale 1/127
  // rounds 0.5 to 64/127 (63.5 ties to even) whatever X does.
  PassGraph b;
  b.input("x", DType::Float32, {2, 2});
  b.init("w", values({2, 1}, {0.5f, 1.0f}));
  b.node("MatMul", {"x", "w"}, {"y"}, {}, "");
  b.output("y");
  std::shared_ptr<Graph> g = b.done();
  const SmoothGroup group{"x", {"y_node"}, 2, /*per_token=*/true};
  ChannelStatsObserver stats("x", 2, 16);
  stats.observe(values({2, 2}, {1, 3, -0.3f, 2}));
  const SmoothingSearch search(*g, group, stats, QuantizeOptions{});
  ASSERT_EQ(search.rows(), 2);
  const double w0 = 64.0 / 127.0, y1 = -0.3 * 0.5 + 2.0;
  // s = 1. Row 0 on [0, 3], scale 3/255: exact, error (1/254)^2 from W alone. Row 1 on
  // its own [-0.3, 2], scale 2.3/255, zero point 33.26 -> 33: -0.3 -> -33.26 -> -33 (+33
  // = 0), 2 -> 221.7 -> 222 (+33 = 255). One calibrated range [-0.3, 3] for both rows
  // would round both differently.
  const double q = 2.3 / 255.0;
  const double plain = 1.0 / (254.0 * 254.0) + std::pow(-33 * q * w0 + 222 * q - y1, 2);
  EXPECT_NEAR(search.error({}), plain, 1e-4 * plain);
  // s = (1, 2). Row 0: X/s = [1, 1.5] on scale 1.5/255, exact; s*W = [0.5, 2] on scale
  // 2/127 rounds 0.5 to 64/127 again: error (1/254)^2. Row 1: X/s = [-0.3, 1] on scale
  // 1.3/255, zero point 58.85 -> 59: -0.3 -> -59 (0), 1 -> 196.15 -> 196 (255).
  const double q2 = 1.3 / 255.0;
  const double smoothed = 1.0 / (254.0 * 254.0) + std::pow(-59 * q2 * w0 + 196 * q2 * 2 - y1, 2);
  EXPECT_NEAR(search.error({1.0f, 2.0f}), smoothed, 1e-4 * smoothed);
  // int8 rows: max|x| / 127. Row 0: 1 -> 42.33 -> 42 (of 3/127), 3 exact; row 1: -0.3 ->
  // -19.05 -> -19 (of 2/127), 2 exact.
  QuantizeOptions o8;
  o8.activation_type = DType::Int8;
  const SmoothingSearch search8(*g, group, stats, o8);
  const double e0 = 42.0 * 3.0 / 127.0 * w0 + 3.0 - 3.5, e1 = -19.0 * 2.0 / 127.0 * w0 + 2.0 - y1;
  EXPECT_NEAR(search8.error({}), e0 * e0 + e1 * e1, 1e-4 * (e0 * e0 + e1 * e1));
}

// The estimate as the header defines it, computed plainly.
double scalar_error(const Graph& g, const SmoothGroup& group, const ChannelStatsObserver& st,
                    const std::vector<float>& s, const QuantizeOptions& o) {
  const int64_t k = group.channels;
  Range r{1e30f, -1e30f};
  for (int64_t j = 0; j < k; ++j) {
    r.lo = std::min(r.lo, st.min()[j] / s[j]);
    r.hi = std::max(r.hi, st.max()[j] / s[j]);
  }
  const QuantParams ap = activation_params(r, o.activation_type);
  const float amin = ap.dtype == DType::UInt8 ? 0.0f : -127.0f, amax = ap.dtype == DType::UInt8 ? 255.0f : 127.0f;
  const int64_t rows = static_cast<int64_t>(st.rows());
  double error = 0;
  for (const std::string& name : group.consumers) {
    const WeightView w = weight_view(g, name);
    std::vector<float> wq(static_cast<size_t>(k * w.n));
    std::vector<float> col_scale(static_cast<size_t>(w.n));
    float tensor_max = 0;
    for (int64_t c = 0; c < w.n; ++c) {
      float m = 0;
      for (int64_t j = 0; j < k; ++j) m = std::max(m, std::fabs(s[j] * w.at(j, c)));
      col_scale[c] = symmetric_int8_scale(m);
      tensor_max = std::max(tensor_max, m);
    }
    for (int64_t j = 0; j < k; ++j)
      for (int64_t c = 0; c < w.n; ++c) {
        const float sc = o.per_channel_weights ? col_scale[c] : symmetric_int8_scale(tensor_max);
        wq[j * w.n + c] = std::clamp(std::nearbyint(s[j] * w.at(j, c) / sc), -127.0f, 127.0f) * sc;
      }
    for (int64_t row = 0; row < rows; ++row) {
      const float* x = st.sample_rows().data() + row * k;
      float row_scale = ap.scale, row_zp = static_cast<float>(ap.zero_point), qmin = amin, qmax = amax;
      if (group.per_token) {  // this row's own grid, as octet.QMatMul's dynamic rows
        float lo = 0, hi = 0;
        for (int64_t j = 0; j < k; ++j) lo = std::min(lo, x[j] / s[j]), hi = std::max(hi, x[j] / s[j]);
        const bool int8 = o.activation_type == DType::Int8;
        row_scale = int8 ? std::max(-lo, hi) / 127.0f : (hi - lo) / 255.0f;
        row_zp = int8 ? 0.0f : std::nearbyint(-lo / row_scale);
        qmin = int8 ? -128.0f : 0.0f;
        qmax = int8 ? 127.0f : 255.0f;
      }
      for (int64_t c = 0; c < w.n; ++c) {
        double exact = 0, approx = 0;
        for (int64_t j = 0; j < k; ++j) {
          const float q = std::clamp(std::nearbyint(x[j] / s[j] / row_scale) + row_zp, qmin, qmax);
          exact += static_cast<double>(x[j]) * w.at(j, c);
          approx += static_cast<double>((q - row_zp) * row_scale) * wq[j * w.n + c];
        }
        error += (approx - exact) * (approx - exact);
      }
    }
  }
  return error;
}

TEST(SmoothingSearch, MatchesTheScalarEstimateOnBlocksAndLayouts) {
  constexpr int64_t K = 24;
  std::shared_ptr<Graph> g;
  {
    PassGraph c;
    c.input("x", DType::Float32, {65, K});
    c.init("w1", noise({K, 600}, 1, false));
    c.init("w2", noise({7, K}, 2, false));
    c.init("w3", noise({K, 256}, 3, false));
    c.node("MatMul", {"x", "w1"}, {"y1"});
    c.node("Gemm", {"x", "w2"}, {"y2"}, {Attribute::make_int("transB", 1)});
    c.node("MatMul", {"x", "w3"}, {"y3"});
    for (const char* y : {"y1", "y2", "y3"}) c.output(y);
    g = c.done();
  }
  ChannelStatsObserver stats("x", K, 40);  // 65 rows seen, 40 kept
  stats.observe(noise({65, K}, 4, true));
  ASSERT_EQ(stats.rows(), 40u);
  std::vector<float> smooth(K);
  for (int64_t j = 0; j < K; ++j) smooth[j] = j % 7 == 3 ? 4.0f : 0.8f + 0.05f * static_cast<float>(j);
  for (bool per_token : {false, true})
    for (bool per_channel : {true, false})
      for (DType act : {DType::UInt8, DType::Int8}) {
        const SmoothGroup group{"x", {"y1_node", "y2_node", "y3_node"}, K, per_token};
        QuantizeOptions o;
        o.per_channel_weights = per_channel;
        o.activation_type = act;
        const SmoothingSearch search(*g, group, stats, o);
        for (const std::vector<float>& s : {std::vector<float>(K, 1.0f), smooth}) {
          const double want = scalar_error(*g, group, stats, s, o);
          ASSERT_GT(want, 0);
          EXPECT_NEAR(search.error(s), want, 1e-4 * want) << "per_token " << per_token << " per_channel " << per_channel << " int8 " << (act == DType::Int8);
        }
        // The wrapper the header keeps for single questions agrees with the search.
        EXPECT_DOUBLE_EQ(smoothing_error(*g, group, stats, smooth, o), search.error(smooth));
      }
}

}  // namespace
}  // namespace octet::quant
