// Reference kernels: Resize and BatchNormalization.
#include <cmath>

#include "ref_shape_testing.h"

namespace octet {
namespace {

using namespace reftest;
using Shape = std::vector<int64_t>;
using F = std::vector<float>;

Attrs mode(const std::string& m, const std::string& coords = "half_pixel") {
  return {Attribute::make_string("mode", m), Attribute::make_string("coordinate_transformation_mode", coords)};
}
Tensor scales(const F& s) { return f32({static_cast<int64_t>(s.size())}, s); }

Tensor resize_scales(const Tensor& x, const F& s, Attrs a, int64_t opset = 19) {
  return run1("Resize", {x, std::nullopt, scales(s)}, a, opset);
}
Tensor resize_sizes(const Tensor& x, const Shape& sizes, Attrs a, int64_t opset = 19) {
  return run1("Resize", {x, std::nullopt, std::nullopt, ints(sizes)}, a, opset);
}

// Keys' cubic convolution on one axis, straight from the definition: output y reads the
// input at x = (y + 0.5) * in / out - 0.5 with weights W(|j - x|) for j = floor(x)-1 ..
// floor(x)+2, indices clamped to the edges.
F cubic_1d(const F& in, int64_t out, double a) {
  auto w = [&](double t) {
    t = std::fabs(t);
    if (t <= 1) return (a + 2) * t * t * t - (a + 3) * t * t + 1;
    if (t < 2) return a * t * t * t - 5 * a * t * t + 8 * a * t - 4 * a;
    return 0.0;
  };
  const int64_t n = static_cast<int64_t>(in.size());
  F y;
  for (int64_t o = 0; o < out; ++o) {
    const double x = (o + 0.5) * double(n) / double(out) - 0.5;
    double s = 0;
    for (int64_t j = int64_t(std::floor(x)) - 1; j <= int64_t(std::floor(x)) + 2; ++j)
      s += w(double(j) - x) * in[std::clamp<int64_t>(j, 0, n - 1)];
    y.push_back(static_cast<float>(s));
  }
  return y;
}

TEST(RefResize, CubicHalfPixelAgainstDefinition) {
  // The ViT position-embedding case: 37 -> 16 (downsampling, no antialias), and upsampling.
  for (auto [in, out] : {std::pair<int64_t, int64_t>{37, 16}, {5, 12}, {1, 4}, {6, 1}}) {
    const F x = noise(in, static_cast<uint32_t>(in * 100 + out));
    Tensor y = resize_sizes(f32({1, 1, in}, x), {1, 1, out}, mode("cubic"));
    expect_close(values<float>(y), cubic_1d(x, out, -0.75), 1e-6f);
  }
  // Separable: a 2-D resize is the 1-D one along each axis.
  const F img = noise(4 * 5, 7);
  Tensor y = resize_sizes(f32({1, 1, 4, 5}, img), {1, 1, 3, 7}, mode("cubic"));
  F rows;
  for (int64_t r = 0; r < 4; ++r) {
    F row = cubic_1d(F(img.begin() + r * 5, img.begin() + r * 5 + 5), 7, -0.75);
    rows.insert(rows.end(), row.begin(), row.end());
  }
  F want;
  std::vector<F> cols(7);
  for (int64_t c = 0; c < 7; ++c) {
    F col;
    for (int64_t r = 0; r < 4; ++r) col.push_back(rows[r * 7 + c]);
    cols[c] = cubic_1d(col, 3, -0.75);
  }
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 7; ++c) want.push_back(cols[c][r]);
  expect_close(values<float>(y), want, 1e-5f);
}

TEST(RefResize, LinearSpecExample) {
  Tensor y = resize_scales(f32({1, 1, 2, 2}, {1, 2, 3, 4}), {1, 1, 2, 2}, mode("linear"));
  ASSERT_EQ(y.shape(), (Shape{1, 1, 4, 4}));
  expect_close(values<float>(y), {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4}, 1e-6f);
  // align_corners keeps the corners; 4 -> 7.
  y = resize_sizes(f32({4}, {0, 3, 6, 9}), {7}, mode("linear", "align_corners"));
  expect_close(values<float>(y), {0, 1.5, 3, 4.5, 6, 7.5, 9}, 1e-6f);
}

TEST(RefResize, NearestModes) {
  const Tensor x = f32({4}, {0, 1, 2, 3});
  auto nearest = [&](const std::string& m, const Shape& sizes) {
    Attrs a = mode("nearest", "asymmetric");
    a.push_back(Attribute::make_string("nearest_mode", m));
    return values<float>(resize_sizes(x, sizes, a));
  };
  // x = y * 4 / 7: 0, .57, 1.14, 1.71, 2.29, 2.86, 3.43
  EXPECT_EQ(nearest("floor", {7}), (F{0, 0, 1, 1, 2, 2, 3}));
  EXPECT_EQ(nearest("ceil", {7}), (F{0, 1, 2, 2, 3, 3, 3}));  // 4 clamps to 3
  EXPECT_EQ(nearest("round_prefer_floor", {7}), (F{0, 1, 1, 2, 2, 3, 3}));
  // x = y / 2: the halves decide.
  EXPECT_EQ(nearest("round_prefer_floor", {8}), (F{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(nearest("round_prefer_ceil", {8}), (F{0, 1, 1, 2, 2, 3, 3, 3}));
  // Opset 10: (X, scales), asymmetric, floor.
  Tensor y = run1("Resize", {f32({1, 2}, {5, 7}), scales({1, 2.5f})}, {Attribute::make_string("mode", "nearest")}, 10);
  EXPECT_EQ(values<float>(y), (F{5, 5, 5, 7, 7}));
}

TEST(RefResize, EdgeShapes) {
  // A single pixel upsampled is constant in every mode; a downsample to nothing is empty.
  for (const char* m : {"nearest", "linear", "cubic"}) {
    Tensor y = resize_scales(f32({1, 1, 1, 1}, {2.5f}), {1, 1, 3, 2}, mode(m));
    EXPECT_EQ(y.shape(), (Shape{1, 1, 3, 2}));
    EXPECT_EQ(values<float>(y), F(6, 2.5f)) << m;
    EXPECT_EQ(resize_scales(f32({1, 2}, {1, 2}), {1, 0.4f}, mode(m)).shape(), (Shape{1, 0}));
  }
  EXPECT_EQ(resize_sizes(f32({0, 3}, {}), {0, 6}, mode("linear")).shape(), (Shape{0, 6}));
  // Rank 5 with axes: only the listed axes move.
  Attrs a = mode("nearest");
  a.push_back(Attribute::make_ints("axes", {-1, 2}));
  Tensor y = resize_sizes(f32({1, 2, 1, 1, 2}, {1, 2, 3, 4}), {4, 2}, a);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 2, 1, 4}));
  EXPECT_EQ(values<float>(y), (F{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
}

TEST(RefResize, IntegerOutputsRoundAndSaturate) {
  // Cubic overshoots between 0 and 255: the float result rounded half to even, then clipped.
  const F v = {0, 255, 0, 255, 255, 0};
  Tensor yf = resize_scales(f32({6}, v), {2.5f}, mode("cubic"));
  Tensor u(DType::UInt8, {6});
  for (int i = 0; i < 6; ++i) u.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(v[i]);
  Tensor yu = resize_scales(u, {2.5f}, mode("cubic"));
  ASSERT_EQ(yu.shape(), yf.shape());
  const F f = values<float>(yf);
  bool clipped = false;
  for (size_t i = 0; i < f.size(); ++i) {
    const double want = std::clamp(std::nearbyint(double(f[i])), 0.0, 255.0);
    clipped |= f[i] > 255.5f || f[i] < -0.5f;
    EXPECT_EQ(yu.data<uint8_t>()[i], static_cast<uint8_t>(want)) << i;
  }
  EXPECT_TRUE(clipped);  // the case does exercise saturation
}

TEST(RefResize, AntialiasAndExcludeOutside) {
  // Linear antialias 4 -> 2: the tent widened to two input pixels, weights 1/8, 3/8, 3/8, 1/8.
  Attrs a = mode("linear");
  a.push_back(Attribute::make_int("antialias", 1));
  expect_close(values<float>(resize_sizes(f32({4}, {0, 4, 8, 12}), {2}, a)), {2.5f, 9.5f}, 1e-6f);
  // exclude_outside: at the border the outside taps drop out and the rest are renormalized,
  // so a constant stays constant and a ramp's end is not pulled toward the edge pixel.
  Attrs c = mode("cubic", "asymmetric");
  c.push_back(Attribute::make_int("exclude_outside", 1));
  c.push_back(Attribute::make_float("cubic_coeff_a", -0.5f));
  expect_close(values<float>(resize_sizes(f32({3}, F(3, 4.0f)), {5}, c)), F(5, 4.0f), 1e-6f);
  const F y = values<float>(resize_sizes(f32({4}, {0, 1, 2, 3}), {8}, c));
  // y[1] reads x = 0.5: taps -1 (outside), 0, 1, 2 with weights W(1.5), W(.5), W(.5), W(1.5).
  const double w15 = -0.5 * 3.375 + 2.5 * 2.25 - 4 * 1.5 + 2, w05 = 1.5 * 0.125 - 2.5 * 0.25 + 1;
  EXPECT_NEAR(y[1], (w05 * 0 + w05 * 1 + w15 * 2) / (w05 + w05 + w15), 1e-6);
}

TEST(RefResize, KeepAspectRatioAndCropAndResize) {
  Attrs a = mode("nearest");
  a.push_back(Attribute::make_ints("axes", {2, 3}));
  a.push_back(Attribute::make_string("keep_aspect_ratio_policy", "not_larger"));
  // 4x6 into at most 2x2: scale min(2/4, 2/6) = 1/3 -> 1x2.
  EXPECT_EQ(resize_sizes(iota_f32({1, 1, 4, 6}), {2, 2}, a).shape(), (Shape{1, 1, 1, 2}));
  a.back() = Attribute::make_string("keep_aspect_ratio_policy", "not_smaller");
  EXPECT_EQ(resize_sizes(iota_f32({1, 1, 4, 6}), {2, 2}, a).shape(), (Shape{1, 1, 2, 3}));
  // tf_crop_and_resize: the roi [0.5, 1.5] of a 1-D ramp of 3; past the end -> extrapolation_value.
  Attrs t = mode("linear", "tf_crop_and_resize");
  t.push_back(Attribute::make_float("extrapolation_value", -1.0f));
  Tensor y = run1("Resize", {f32({3}, {0, 10, 20}), f32({2}, {0.5f, 1.5f}), std::nullopt, ints({5})}, t, 19);
  // x = 0.5 * 2 + y * 1 * 2 / 4 = 1, 1.5, 2, 2.5, 3 -> 10, 15, 20, then outside.
  EXPECT_EQ(values<float>(y), (F{10, 15, 20, -1, -1}));
}

TEST(RefResize, OpsetLayoutsAndErrors) {
  // Opset 11: scales is required, passed empty beside sizes.
  Tensor y = run1("Resize", {f32({2}, {1, 3}), f32({0}, {}), f32({0}, {}), ints({3})}, mode("linear", "align_corners"), 11);
  EXPECT_EQ(values<float>(y), (F{1, 2, 3}));
  const Tensor x = f32({2}, {1, 3});
  expect_node_error([&] { run1("Resize", {x, std::nullopt, scales({2}), ints({4})}, mode("linear"), 19); },
                    "both scales and sizes");
  expect_node_error([&] { run1("Resize", {x}, mode("linear"), 19); }, "neither scales nor sizes");
  expect_node_error([&] { resize_scales(x, {2}, mode("area")); }, "mode 'area'");
  expect_node_error([&] { resize_scales(x, {2}, mode("nearest", "tf_half_pixel_for_nn"), 13); },
                    "tf_half_pixel_for_nn");
  expect_node_error([&] { resize_scales(x, {2}, mode("linear", "half_pixel_symmetric"), 18); },
                    "half_pixel_symmetric");
  Attrs aa = mode("nearest");
  aa.push_back(Attribute::make_int("antialias", 1));
  expect_node_error([&] { resize_scales(x, {2}, aa); }, "antialias");
  Attrs ax = mode("nearest");
  ax.push_back(Attribute::make_ints("axes", {0}));
  expect_node_error([&] { resize_scales(x, {2}, ax, 13); }, "opset 18");
  expect_node_error([&] { resize_scales(x, {-2}, mode("linear")); }, "positive");
  expect_node_error([&] { resize_sizes(x, {2, 2}, mode("linear")); }, "one value per resized axis");
  expect_node_error([&] { resize_sizes(x, {4}, mode("linear", "tf_crop_and_resize")); }, "roi");
}

// ---------------------------------------------------------------- BatchNormalization

TEST(RefBatchNorm, InferenceFormula) {
  const Tensor x = f32({2, 2, 1, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor s = f32({2}, {2, 0.5f}), b = f32({2}, {1, -1}), m = f32({2}, {1, 4}), v = f32({2}, {3, 0.25f});
  Tensor y = run1("BatchNormalization", {x, s, b, m, v}, {Attribute::make_float("epsilon", 1.0f)}, 15);
  // channel 0: (x - 1) / 2 * 2 + 1;  channel 1: (x - 4) / sqrt(1.25) * 0.5 - 1.
  const double k = 0.5 / std::sqrt(1.25);
  expect_close(values<float>(y), {1, 2, float((3 - 4) * k - 1), float((4 - 4) * k - 1), 5, 6,
                                  float((7 - 4) * k - 1), float((8 - 4) * k - 1)}, 1e-6f);
  // Rank 2 (BatchNorm1d) and float16 data with float32 statistics (opset 15's T2).
  Tensor y2 = run1("BatchNormalization", {f32({1, 2}, {3, 4}), s, b, m, v}, {Attribute::make_float("epsilon", 1.0f)}, 15);
  expect_close(values<float>(y2), {3, float(0 * k - 1)}, 1e-6f);
  Tensor yh = run1("BatchNormalization", {f16({1, 2}, {3, 4}), f16({2}, {2, 0.5f}), f16({2}, {1, -1}), m, v},
                   {Attribute::make_float("epsilon", 1.0f)}, 15);
  EXPECT_EQ(yh.dtype(), DType::Float16);
  expect_close(floats(yh), {3, -1}, 1e-3f);
  // An empty batch, and a float64 X with float64 statistics.
  EXPECT_EQ(run1("BatchNormalization", {f32({0, 2, 3}, {}), s, b, m, v}, {}, 15).shape(), (Shape{0, 2, 3}));
  const Tensor d = f64({2}, {1, 1}), z = f64({2}, {0, 0});
  Tensor y64 = run1("BatchNormalization", {f64({1, 2, 1}, {0.25, -8}), d, z, z, d}, {Attribute::make_float("epsilon", 0.0f)}, 15);
  EXPECT_EQ(values<double>(y64), (std::vector<double>{0.25, -8}));
}

TEST(RefBatchNorm, RejectsTrainingAndBadShapes) {
  const Tensor x = f32({1, 2, 2}, F(4, 1.0f)), p = f32({2}, {1, 1});
  expect_node_error([&] {
    run1("BatchNormalization", {x, p, p, p, p}, {Attribute::make_int("training_mode", 1)}, 15);
  }, "training_mode=1");
  expect_node_error([&] { run_op("BatchNormalization", {x, p, p, p, p}, {}, 15, 3); }, "inference only");
  expect_node_error([&] { run1("BatchNormalization", {x, f32({3}, F(3, 1.0f)), p, p, p}, {}, 15); }, "channels");
  expect_node_error([&] { run1("BatchNormalization", {f32({2}, {1, 2}), p, p, p, p}, {}, 15); }, "rank >= 2");
}

}  // namespace
}  // namespace octet
