// Observers, calibration ranges and quantization parameters: hand-computed values, the
// histogram's exact widening, and the range methods on distributions with known answers.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "octet/error.h"
#include "quant/observers.h"
#include "quant/quant_params.h"
#include "quant/ranges.h"

namespace octet::quant {
namespace {

template <typename Fn>
void expect_error(Fn fn, const std::string& needle) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
    return;
  }
  ADD_FAILURE() << "no error; expected one containing: " << needle;
}

std::vector<float> uniform(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> out(n);
  for (float& v : out) v = d(gen);
  return out;
}

std::vector<float> gaussian(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> out(n);
  for (float& v : out) v = d(gen);
  return out;
}

HistogramObserver histogram_of(const std::vector<float>& data, const std::string& name = "t") {
  HistogramObserver h(name);
  h.observe(data.data(), data.size());
  return h;
}

// The counts of `data` binned directly on h's final grid.
std::vector<uint64_t> recount(const HistogramObserver& h, const std::vector<float>& data) {
  std::vector<uint64_t> counts(h.bins(), 0);
  const double inv = 1.0 / h.bin_width();
  for (float x : data) {
    if (!std::isfinite(x)) continue;
    const double t = std::floor(static_cast<double>(x) * inv) - static_cast<double>(h.first_bin());
    EXPECT_GE(t, 0) << x;
    EXPECT_LT(t, h.bins()) << x;
    ++counts[static_cast<size_t>(std::clamp(t, 0.0, h.bins() - 1.0))];
  }
  return counts;
}

TEST(ObserverMinMax, TracksFiniteExtremesAcrossBatches) {
  std::vector<float> a{0, 1, 2, 3, 4}, b{5, 6, 7, 8, 9};
  MinMaxObserver o("act");
  o.observe(a.data(), a.size());
  o.observe(b.data(), b.size());
  EXPECT_EQ(o.min(), 0.0f);
  EXPECT_EQ(o.max(), 9.0f);
  EXPECT_EQ(o.count(), 10u);
  const Range r = minmax_range(o);
  EXPECT_EQ(r.lo, 0.0f);
  EXPECT_EQ(r.hi, 9.0f);
  const QuantParams u8 = activation_params(r, DType::UInt8);
  EXPECT_FLOAT_EQ(u8.scale, 9.0f / 255);
  EXPECT_EQ(u8.zero_point, 0);
  EXPECT_EQ(u8.dtype, DType::UInt8);
  const QuantParams s8 = activation_params(r, DType::Int8);
  EXPECT_FLOAT_EQ(s8.scale, 9.0f / 127);
  EXPECT_EQ(s8.zero_point, 0);
}

TEST(ObserverMinMax, NonFiniteValuesAreSkippedAndAllNonFiniteIsAnError) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> x{nan, 1, -2, inf, -inf};
  MinMaxObserver o("act");
  o.observe(x.data(), x.size());
  EXPECT_EQ(o.min(), -2.0f);
  EXPECT_EQ(o.max(), 1.0f);
  EXPECT_EQ(o.count(), 2u);
  EXPECT_EQ(o.nonfinite_count(), 3u);
  MinMaxObserver bad("layer3/out");
  std::vector<float> nans{nan, nan, inf};
  bad.observe(nans.data(), nans.size());
  expect_error([&] { minmax_range(bad); }, "tensor 'layer3/out': no finite value observed (3 NaN/inf values)");
  HistogramObserver hbad("h");
  hbad.observe(nans.data(), nans.size());
  expect_error([&] { percentile_range(hbad, 99); }, "tensor 'h': no finite value observed");
  expect_error([&] { entropy_range(hbad); }, "tensor 'h'");
  expect_error([&] { mse_range(hbad); }, "tensor 'h'");
  // NaN in a histogram is skipped the same way.
  HistogramObserver h("h");
  h.observe(x.data(), x.size());
  EXPECT_EQ(h.count(), 2u);
  EXPECT_EQ(std::accumulate(h.counts().begin(), h.counts().end(), uint64_t{0}), 2u);
}

TEST(ObserverParams, ActivationParamsIncludeZeroAndNeverDivideByZero) {
  QuantParams p = activation_params({-1, 3}, DType::UInt8);
  EXPECT_FLOAT_EQ(p.scale, 4.0f / 255);
  EXPECT_EQ(p.zero_point, 64);  // round(1 / (4/255)) = round(63.75)
  p = activation_params({2, 5}, DType::UInt8);  // widened to [0, 5]
  EXPECT_FLOAT_EQ(p.scale, 5.0f / 255);
  EXPECT_EQ(p.zero_point, 0);
  p = activation_params({-5, -2}, DType::UInt8);  // widened to [-5, 0]
  EXPECT_FLOAT_EQ(p.scale, 5.0f / 255);
  EXPECT_EQ(p.zero_point, 255);
  p = activation_params({-1, 3}, DType::Int8);
  EXPECT_FLOAT_EQ(p.scale, 3.0f / 127);
  EXPECT_EQ(p.zero_point, 0);
  for (DType t : {DType::UInt8, DType::Int8}) {
    p = activation_params({0, 0}, t);
    EXPECT_EQ(p.scale, 1.0f);
    EXPECT_EQ(p.zero_point, 0);
    p = activation_params({0, 1e-42f}, t);  // would underflow: smallest normal float
    EXPECT_EQ(p.scale, FLT_MIN);
  }
  // Zero is exact: it quantizes to the zero point and back to 0.
  p = activation_params({-0.37f, 2.9f}, DType::UInt8);
  EXPECT_EQ(std::nearbyint(0.0f / p.scale) + p.zero_point, p.zero_point);
  expect_error([] { activation_params({1, 0}, DType::UInt8); }, "range [1, 0] is not a finite interval");
  expect_error([] { activation_params({0, INFINITY}, DType::UInt8); }, "not a finite interval");
  expect_error([] { activation_params({0, 1}, DType::Float32); }, "uint8 (asymmetric) or int8 (symmetric)");
}

TEST(ObserverParams, WeightScalesPerChannelAndPerTensor) {
  // W [2, 3]: rows [1, -2, 0.5] and [0, 0, 0].
  const std::vector<float> w{1, -2, 0.5f, 0, 0, 0};
  ChannelParams rows = weight_params_per_channel(w.data(), {2, 3}, 0);
  ASSERT_EQ(rows.scales.size(), 2u);
  EXPECT_FLOAT_EQ(rows.scales[0], 2.0f / 127);
  EXPECT_EQ(rows.scales[1], 1.0f);  // an all-zero channel
  EXPECT_EQ(rows.zero_points, (std::vector<int32_t>{0, 0}));
  ChannelParams cols = weight_params_per_channel(w.data(), {2, 3}, -1);  // MatMul B [K, N]: axis 1
  EXPECT_EQ(cols.axis, 1);
  ASSERT_EQ(cols.scales.size(), 3u);
  EXPECT_FLOAT_EQ(cols.scales[0], 1.0f / 127);
  EXPECT_FLOAT_EQ(cols.scales[1], 2.0f / 127);
  EXPECT_FLOAT_EQ(cols.scales[2], 0.5f / 127);
  // Axis 1 of a [2, 3, 2] tensor: channel c takes w[o, c, i] for every o and i.
  std::vector<float> w3(12, 0.0f);
  w3[1 * 6 + 2 * 2 + 1] = -4;  // o = 1, c = 2, i = 1
  w3[0 * 6 + 0 * 2 + 0] = 3;   // o = 0, c = 0, i = 0
  ChannelParams mid = weight_params_per_channel(w3.data(), {2, 3, 2}, 1);
  EXPECT_FLOAT_EQ(mid.scales[0], 3.0f / 127);
  EXPECT_EQ(mid.scales[1], 1.0f);
  EXPECT_FLOAT_EQ(mid.scales[2], 4.0f / 127);
  const QuantParams whole = weight_params_per_tensor(w.data(), w.size());
  EXPECT_FLOAT_EQ(whole.scale, 2.0f / 127);
  EXPECT_EQ(whole.zero_point, 0);
  // Asymmetric: row 0 spans [-2, 1].
  ChannelParams u8 = weight_params_per_channel(w.data(), {2, 3}, 0, DType::UInt8, false);
  EXPECT_FLOAT_EQ(u8.scales[0], 3.0f / 255);
  EXPECT_EQ(u8.zero_points[0], 170);  // round(2 / (3/255))
  ChannelParams s8 = weight_params_per_channel(w.data(), {2, 3}, 0, DType::Int8, false);
  EXPECT_EQ(s8.zero_points[0], 42);  // -128 + 170
  std::vector<float> bad = w;
  bad[4] = std::numeric_limits<float>::quiet_NaN();
  expect_error([&] { weight_params_per_channel(bad.data(), {2, 3}, 0, DType::Int8, true, "fc.w"); },
               "weight 'fc.w': value nan at flat index 4 is not finite");
  expect_error([&] { weight_params_per_channel(w.data(), {2, 3}, 2); }, "channel axis 2 is out of range for shape [2,3]");
  expect_error([&] { weight_params_per_tensor(w.data(), w.size(), DType::UInt8, true); }, "symmetric quantization is int8 only");
}

TEST(ObserverHistogram, WideningMergesBinsExactly) {
  // Chunks that keep forcing the range outward, by small and by huge factors.
  std::vector<std::vector<float>> chunks{uniform(5000, 0, 1, 1),       uniform(5000, -3, 0.5f, 2),
                                         uniform(5000, 10, 40, 3),     uniform(300, -1000, -999, 4),
                                         uniform(5000, 0.1f, 0.2f, 5), gaussian(5000, 6)};
  HistogramObserver streamed("t");
  std::vector<float> all;
  for (const auto& c : chunks) {
    streamed.observe(c.data(), c.size());
    all.insert(all.end(), c.begin(), c.end());
    // After every widening the histogram is that of all data so far on the current grid.
    EXPECT_EQ(streamed.counts(), recount(streamed, all));
    EXPECT_EQ(streamed.count(), all.size());
    EXPECT_EQ(streamed.min(), *std::min_element(all.begin(), all.end()));
    EXPECT_EQ(streamed.max(), *std::max_element(all.begin(), all.end()));
  }
  const HistogramObserver at_once = histogram_of(all);
  EXPECT_EQ(std::accumulate(streamed.counts().begin(), streamed.counts().end(), uint64_t{0}), all.size());
  const double width = std::max(streamed.bin_width(), at_once.bin_width());
  for (double p : {99.0, 99.9, 99.99}) {
    const Range a = percentile_range(streamed, p), b = percentile_range(at_once, p);
    EXPECT_NEAR(a.lo, b.lo, width) << p;
    EXPECT_NEAR(a.hi, b.hi, width) << p;
  }
}

TEST(ObserverHistogram, HugeWideningsAndPointMasses) {
  HistogramObserver h("t");
  std::vector<float> same(7, 3.0f);
  h.observe(same.data(), same.size());  // one value: no grid yet
  EXPECT_FALSE(h.has_grid());
  EXPECT_EQ(percentile_range(h, 99).lo, 3.0f);
  EXPECT_EQ(entropy_range(h).hi, 3.0f);
  EXPECT_EQ(mse_range(h).lo, 3.0f);
  std::vector<float> all = same;
  for (std::vector<float> c : {std::vector<float>{3.0f, 3.0f + 1e-6f}, std::vector<float>{1e30f, -1e25f},
                               std::vector<float>{0.0f, -3e38f}}) {
    h.observe(c.data(), c.size());
    all.insert(all.end(), c.begin(), c.end());
    EXPECT_TRUE(h.has_grid());
    EXPECT_EQ(h.counts(), recount(h, all));
    EXPECT_EQ(h.min(), *std::min_element(all.begin(), all.end()));
    EXPECT_EQ(h.max(), *std::max_element(all.begin(), all.end()));
  }
  // An all-zero tensor: every range is [0, 0], and its parameters are well defined.
  const HistogramObserver zeros = histogram_of(std::vector<float>(100, 0.0f));
  for (Range r : {minmax_range(zeros), percentile_range(zeros, 99.9), entropy_range(zeros), mse_range(zeros)}) {
    EXPECT_EQ(r.lo, 0.0f);
    EXPECT_EQ(r.hi, 0.0f);
  }
  EXPECT_EQ(activation_params(mse_range(zeros), DType::UInt8).scale, 1.0f);
  expect_error([] { HistogramObserver("t", 4); }, "at least 8 bins");
}

TEST(ObserverRanges, PercentileOnKnownDistributions) {
  const HistogramObserver u = histogram_of(uniform(200000, 0, 1, 7));
  Range r = percentile_range(u, 99);
  EXPECT_EQ(r.lo, u.min());  // no negative values: lo stays at min
  EXPECT_NEAR(r.hi, 0.99, u.bin_width() + 0.003);
  r = percentile_range(u, 100);
  EXPECT_EQ(r.hi, u.max());
  const HistogramObserver s = histogram_of(uniform(200000, -1, 1, 8));
  r = percentile_range(s, 99);
  EXPECT_NEAR(r.lo, -0.98, s.bin_width() + 0.005);
  EXPECT_NEAR(r.hi, 0.98, s.bin_width() + 0.005);
  expect_error([&] { percentile_range(s, 40); }, "tensor 't': percentile must be in [50, 100], got 40");
}

TEST(ObserverRanges, EntropyAndMseClipRareOutliers) {
  std::vector<float> x = gaussian(1000000, 9);
  x.push_back(100.0f);
  x.push_back(-100.0f);
  const HistogramObserver h = histogram_of(x);
  const Range mm = minmax_range(h);
  EXPECT_EQ(mm.lo, -100.0f);
  EXPECT_EQ(mm.hi, 100.0f);
  for (Range r : {entropy_range(h), mse_range(h), mse_range(h, 256, true)}) {
    EXPECT_LT(r.hi, 40.0f);   // far inside the outliers
    EXPECT_GT(r.hi, 3.5f);    // but the Gaussian's bulk is kept
    EXPECT_GT(r.lo, -40.0f);
    EXPECT_LT(r.lo, -3.5f);
  }
}

TEST(ObserverRanges, MseKeepsAUniformRangeAndEntropyKeepsOneSidedLoAtMin) {
  const HistogramObserver u = histogram_of(uniform(200000, 0, 1, 10));
  Range r = mse_range(u);
  EXPECT_EQ(r.lo, u.min());
  EXPECT_GT(r.hi, 0.99f);
  const HistogramObserver s = histogram_of(uniform(200000, -1, 1, 11));
  r = mse_range(s, 256, true);
  EXPECT_LT(r.lo, -0.98f);
  EXPECT_GT(r.hi, 0.98f);
  // ReLU output: half zeros, half |Gaussian|.
  std::vector<float> relu = gaussian(200000, 12);
  for (float& v : relu) v = std::max(v, 0.0f);
  const HistogramObserver h = histogram_of(relu);
  for (Range rr : {entropy_range(h), mse_range(h), percentile_range(h, 99.9)}) {
    EXPECT_EQ(rr.lo, 0.0f);
    EXPECT_GT(rr.hi, 2.0f);
    EXPECT_LE(rr.hi, h.max());
  }
  expect_error([&] { entropy_range(h, 2); }, "quant_levels must be in [4, 65536]");
}

TEST(ObserverRanges, ExtremesMostSamplesReachAreNeverClipped) {
  // Eleven samples' maxima 0..10 in some order: rank 9 of 0..10 is 9 (only one sample, 10,
  // goes above it); their minima -0..-10: the 10th percentile from the top is -9.
  std::vector<float> lo, hi;
  for (int i : {3, 10, 0, 7, 1, 9, 2, 8, 4, 6, 5}) hi.push_back(float(i)), lo.push_back(-float(i));
  Range r = keep_recurring_extremes({-2, 4}, lo, hi);
  EXPECT_EQ(r.lo, -9.0f);
  EXPECT_EQ(r.hi, 9.0f);
  // Never narrows; with two samples, what both reach.
  r = keep_recurring_extremes({-10, 10}, lo, hi);
  EXPECT_EQ(r.lo, -10.0f);
  EXPECT_EQ(r.hi, 10.0f);
  r = keep_recurring_extremes({0, 1}, {-4, -2}, {3, 5});
  EXPECT_EQ(r.lo, -2.0f);
  EXPECT_EQ(r.hi, 3.0f);
  r = keep_recurring_extremes({0, 1}, {}, {});
  EXPECT_EQ(r.hi, 1.0f);
  expect_error([&] { keep_recurring_extremes({0, 1}, {0, 0}, {1}); }, "2 sample minima but 1 maxima");
}

TEST(ObserverRanges, OutlierChannelsAreNeverClipped) {
  // Channels 0-5 reach |x| = 1, channel 6 reaches 10 on the high side, channel 7 -20 on
  // the low side: median channel max |x| = 1, so with ratio 4 channels 6 and 7 are outliers.
  const std::vector<float> lo{-1, -1, -0.5f, -1, -0.2f, -1, -0.5f, -20}, hi{1, 0.5f, 1, 1, 1, 1, 10, 0.3f};
  Range r = keep_outlier_channels({-2, 2}, lo, hi);
  EXPECT_EQ(r.lo, -20.0f);
  EXPECT_EQ(r.hi, 10.0f);
  // Never narrows; a channel just under the ratio (3.9 x the median) is not an outlier.
  r = keep_outlier_channels({-30, 30}, lo, hi);
  EXPECT_EQ(r.lo, -30.0f);
  EXPECT_EQ(r.hi, 30.0f);
  std::vector<float> lo2(lo), hi2(hi);
  lo2[7] = -3.9f;
  hi2[6] = 0.3f;
  r = keep_outlier_channels({-2, 2}, lo2, hi2);
  EXPECT_EQ(r.lo, -2.0f);
  EXPECT_EQ(r.hi, 2.0f);
  // Unobserved channels (min > max) are ignored; fewer than two channels change nothing.
  lo2 = lo, hi2 = hi;
  lo2[0] = 1, hi2[0] = -1;
  r = keep_outlier_channels({-2, 2}, lo2, hi2);
  EXPECT_EQ(r.lo, -20.0f);
  r = keep_outlier_channels({-2, 2}, {-50}, {50});
  EXPECT_EQ(r.hi, 2.0f);
  expect_error([&] { keep_outlier_channels({0, 1}, {0, 0}, {1}); }, "2 channel minima but 1 maxima");

  // The case it is for: one channel 40x the rest on every row is 1/128 of the values, so
  // the 99th percentile clips it; widened, the range covers it again (entropy, which
  // happens to keep it here, is left as it was).
  std::vector<float> x = gaussian(128 * 2048, 13);
  std::vector<float> cmin(128, 1e30f), cmax(128, -1e30f);
  for (size_t i = 0; i < x.size(); ++i) {
    if (i % 128 == 5) x[i] = 40 + x[i];
    cmin[i % 128] = std::min(cmin[i % 128], x[i]);
    cmax[i % 128] = std::max(cmax[i % 128], x[i]);
  }
  const HistogramObserver h = histogram_of(x);
  EXPECT_LT(percentile_range(h, 99).hi, 30.0f);
  for (Range clipped : {entropy_range(h), percentile_range(h, 99)}) {
    const Range kept = keep_outlier_channels(clipped, cmin, cmax);
    EXPECT_EQ(kept.hi, h.max());
    EXPECT_EQ(kept.lo, clipped.lo);  // the low side has no outlier channel
  }
}

}  // namespace
}  // namespace octet::quant
