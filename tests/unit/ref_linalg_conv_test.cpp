// Reference kernel: Conv.
#include <array>

#include "ref_shape_testing.h"

namespace octet {
namespace {

using namespace reftest;
using Shape = std::vector<int64_t>;
using F = std::vector<float>;

struct ConvParams {
  Shape strides, dilations, pads;  // pads: begins then ends
  int64_t group = 1;
};

// Naive N-d convolution in double, straight from the definition.
F naive_conv(const F& x, const Shape& xs, const F& w, const Shape& ws, const F* bias, const ConvParams& p,
             Shape* out_shape) {
  const size_t n = xs.size() - 2;
  Shape out = {xs[0], ws[0]};
  for (size_t d = 0; d < n; ++d)
    out.push_back((xs[2 + d] + p.pads[d] + p.pads[n + d] - ((ws[2 + d] - 1) * p.dilations[d] + 1)) / p.strides[d] + 1);
  *out_shape = out;
  const int64_t cg = ws[1], mg = ws[0] / p.group;
  F y(static_cast<size_t>(shape_numel(out)));
  Shape sp_out(out.begin() + 2, out.end()), sp_k(ws.begin() + 2, ws.end());
  auto unflatten = [](int64_t flat, const Shape& s) {
    Shape idx(s.size());
    for (size_t d = s.size(); d-- > 0;) {
      idx[d] = flat % s[d];
      flat /= s[d];
    }
    return idx;
  };
  for (int64_t b = 0; b < out[0]; ++b)
    for (int64_t m = 0; m < out[1]; ++m)
      for (int64_t o = 0; o < shape_numel(sp_out); ++o) {
        Shape oi = unflatten(o, sp_out);
        double s = bias ? (*bias)[m] : 0.0;
        const int64_t g = m / mg;
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t k = 0; k < shape_numel(sp_k); ++k) {
            Shape ki = unflatten(k, sp_k);
            int64_t xoff = b * xs[1] + g * cg + c;
            bool inside = true;
            for (size_t d = 0; d < n; ++d) {
              int64_t pos = oi[d] * p.strides[d] - p.pads[d] + ki[d] * p.dilations[d];
              inside &= pos >= 0 && pos < xs[2 + d];
              xoff = xoff * xs[2 + d] + pos;
            }
            if (inside) s += double(x[xoff]) * w[(m * cg + c) * shape_numel(sp_k) + k];
          }
        y[(b * out[1] + m) * shape_numel(sp_out) + o] = static_cast<float>(s);
      }
  return y;
}

Attrs conv_attrs(const ConvParams& p) {
  Attrs a = {Attribute::make_ints("strides", p.strides), Attribute::make_ints("dilations", p.dilations),
             Attribute::make_ints("pads", p.pads), Attribute::make_int("group", p.group)};
  return a;
}

// Runs Conv and the naive version on pseudo-random data; compares.
void check_conv(const Shape& xs, const Shape& ws, const ConvParams& p, bool with_bias, uint32_t seed) {
  F x = noise(shape_numel(xs), seed), w = noise(shape_numel(ws), seed + 1), b = noise(ws[0], seed + 2);
  Shape want_shape;
  F want = naive_conv(x, xs, w, ws, with_bias ? &b : nullptr, p, &want_shape);
  Inputs in = {f32(xs, x), f32(ws, w)};
  if (with_bias) in.push_back(f32({ws[0]}, b));
  Tensor y = run1("Conv", in, conv_attrs(p), 22);
  ASSERT_EQ(y.shape(), want_shape);
  expect_close(values<float>(y), want, 1e-4f);
}

// The ONNX spec's examples: 5x5 (or 7x5) ramp input, 3x3 all-ones filter.
Tensor ramp(int64_t h, int64_t w) { return iota_f32({1, 1, h, w}); }
Tensor ones3x3() { return f32({1, 1, 3, 3}, F(9, 1.0f)); }

TEST(RefConv, SpecExamples) {
  Attrs k = {Attribute::make_ints("kernel_shape", {3, 3})};
  auto with = [&](Attrs extra) {
    Attrs a = k;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  EXPECT_EQ(values<float>(run1("Conv", {ramp(5, 5), ones3x3()}, with({Attribute::make_ints("pads", {1, 1, 1, 1})}), 22)),
            (F{12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84}));
  EXPECT_EQ(values<float>(run1("Conv", {ramp(5, 5), ones3x3()}, with({}), 22)),
            (F{54, 63, 72, 99, 108, 117, 144, 153, 162}));
  Attrs s2 = {Attribute::make_ints("strides", {2, 2})};
  Tensor y = run1("Conv", {ramp(7, 5), ones3x3()}, with({s2[0], Attribute::make_ints("pads", {1, 1, 1, 1})}), 22);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 3}));
  EXPECT_EQ(values<float>(y), (F{12, 27, 24, 63, 108, 81, 123, 198, 141, 112, 177, 124}));
  EXPECT_EQ(values<float>(run1("Conv", {ramp(7, 5), ones3x3()}, with({s2[0]}), 22)), (F{54, 72, 144, 162, 234, 252}));
  y = run1("Conv", {ramp(7, 5), ones3x3()}, with({s2[0], Attribute::make_ints("pads", {1, 0, 1, 0})}), 22);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 2}));
  EXPECT_EQ(values<float>(y), (F{21, 33, 99, 117, 189, 207, 171, 183}));
  y = run1("Conv", {ramp(5, 5), ones3x3()}, with({s2[0], Attribute::make_string("auto_pad", "SAME_LOWER")}), 22);
  EXPECT_EQ(values<float>(y), (F{12, 27, 24, 63, 108, 81, 72, 117, 84}));
}

TEST(RefConv, AutoPadModes) {
  // 1-D, input 6, kernel 4, stride 1: SAME needs 3 pads, odd one at the end (UPPER) or start (LOWER).
  Tensor x = f32({1, 1, 6}, {1, 2, 3, 4, 5, 6}), w = f32({1, 1, 4}, {1, 1, 1, 1});
  auto run = [&](const std::string& mode) {
    return values<float>(run1("Conv", {x, w}, {Attribute::make_string("auto_pad", mode)}, 22));
  };
  EXPECT_EQ(run("SAME_UPPER"), (F{6, 10, 14, 18, 15, 11}));  // pads 1 | 2
  EXPECT_EQ(run("SAME_LOWER"), (F{3, 6, 10, 14, 18, 15}));   // pads 2 | 1
  EXPECT_EQ(run("VALID"), (F{10, 14, 18}));
  EXPECT_EQ(run("NOTSET"), (F{10, 14, 18}));
  // VALID ignores explicit pads; SAME with stride 2 on 5: out 3.
  EXPECT_EQ(values<float>(run1("Conv", {x, w}, {Attribute::make_string("auto_pad", "VALID"),
                                                Attribute::make_ints("pads", {1, 1})}, 22)),
            (F{10, 14, 18}));
  Tensor y = run1("Conv", {f32({1, 1, 5}, {1, 2, 3, 4, 5}), f32({1, 1, 2}, {1, 1})},
                  {Attribute::make_string("auto_pad", "SAME_UPPER"), Attribute::make_ints("strides", {2})}, 22);
  EXPECT_EQ(values<float>(y), (F{3, 7, 5}));  // pads 0 | 1
}

TEST(RefConv, AgainstNaiveIn1d2d3d) {
  check_conv({2, 3, 11}, {4, 3, 3}, {{2}, {1}, {1, 1}, 1}, true, 10);                // Whisper-like stem
  check_conv({1, 4, 9, 7}, {6, 2, 3, 2}, {{1, 2}, {2, 1}, {1, 0, 2, 1}, 2}, true, 20);  // groups, dilations
  check_conv({1, 4, 6, 6}, {4, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1, 1, 1}, 4}, false, 30);  // depthwise
  check_conv({2, 2, 4, 5, 3}, {3, 2, 2, 3, 2}, {{1, 2, 1}, {1, 1, 2}, {0, 1, 1, 1, 0, 0}, 1}, true, 40);  // 3-D
  check_conv({1, 3, 7, 13}, {5, 3, 1, 1}, {{1, 1}, {1, 1}, {0, 0, 0, 0}, 1}, true, 50);  // 1x1, ragged
}

TEST(RefConv, WhisperStemShapes) {
  // Whisper's second conv: kernel 3, stride 2, pads 1: 3000 frames -> 1500 (here scaled down: 30 -> 15).
  check_conv({1, 8, 30}, {8, 8, 3}, {{2}, {1}, {1, 1}, 1}, true, 60);
  check_conv({1, 8, 30}, {8, 8, 3}, {{1}, {1}, {1, 1}, 1}, true, 61);
}

TEST(RefConv, VitPatchEmbedding) {
  // 16x16 patches, stride 16: a 32x48 image gives a 2x3 grid.
  const Shape xs = {1, 3, 32, 48}, ws = {8, 3, 16, 16};
  check_conv(xs, ws, {{16, 16}, {1, 1}, {0, 0, 0, 0}, 1}, true, 70);
  Tensor y = run1("Conv", {f32(xs, noise(shape_numel(xs), 1)), f32(ws, noise(shape_numel(ws), 2))},
                  {Attribute::make_ints("kernel_shape", {16, 16}), Attribute::make_ints("strides", {16, 16})}, 22);
  EXPECT_EQ(y.shape(), (Shape{1, 8, 2, 3}));
}

TEST(RefConv, VitPatchEmbeddingFullSize) {
  // ViT-B/16: [1,3,224,224] x [768,3,16,16], stride 16 -> [1,768,14,14]; spot-check outputs.
  const Shape xs = {1, 3, 224, 224}, ws = {768, 3, 16, 16};
  F x = noise(shape_numel(xs), 80), w = noise(shape_numel(ws), 81), b = noise(768, 82);
  Tensor y = run1("Conv", {f32(xs, x), f32(ws, w), f32({768}, b)},
                  {Attribute::make_ints("kernel_shape", {16, 16}), Attribute::make_ints("strides", {16, 16})}, 22);
  ASSERT_EQ(y.shape(), (Shape{1, 768, 14, 14}));
  F got = values<float>(y);
  for (auto [f, py, px] : {std::array<int64_t, 3>{0, 0, 0}, {5, 13, 2}, {767, 7, 13}}) {
    double s = b[f];
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t ky = 0; ky < 16; ++ky)
        for (int64_t kx = 0; kx < 16; ++kx)
          s += double(x[(c * 224 + py * 16 + ky) * 224 + px * 16 + kx]) * w[((f * 3 + c) * 16 + ky) * 16 + kx];
    EXPECT_NEAR(got[(f * 14 + py) * 14 + px], s, 1e-4) << "filter " << f << " patch " << py << "," << px;
  }
}

TEST(RefConv, HalfPrecisionAndEmptyBatch) {
  Tensor y = run1("Conv", {f16({1, 1, 3}, {1, 2, 3}), f16({1, 1, 2}, {0.5f, 0.25f}), f16({1}, {1})}, {}, 22);
  EXPECT_EQ(y.describe(), "float16[1,1,2]");
  EXPECT_EQ(floats(y), (F{2, 2.75f}));
  Tensor b = run1("Conv", {bf16({1, 1, 2}, {1, 2}), bf16({2, 1, 1}, {2, 3})}, {}, 22);
  EXPECT_EQ(floats(b), (F{2, 4, 3, 6}));
  EXPECT_EQ(run1("Conv", {Tensor(DType::Float32, {0, 2, 5}), iota_f32({3, 2, 3})}, {}, 22).shape(), (Shape{0, 3, 3}));
  Tensor d = run1("Conv", {f64({1, 1, 3}, {1, 2, 3}), f64({1, 1, 2}, {1, -1})}, {}, 22);
  EXPECT_EQ(values<double>(d), (std::vector<double>{-1, -1}));
}

TEST(RefConv, Errors) {
  Tensor x = iota_f32({1, 4, 5, 5});
  expect_node_error([&] { run1("Conv", {x, iota_f32({2, 3, 3, 3})}, {}, 22); }, "do not fit group 1");
  expect_node_error([&] { run1("Conv", {x, iota_f32({2, 4, 3, 3})}, {Attribute::make_int("group", 3)}, 22); }, "group 3");
  expect_node_error([&] { run1("Conv", {x, iota_f32({2, 4, 3})}, {}, 22); }, "equal rank");
  expect_node_error([&] { run1("Conv", {x, iota_f32({2, 4, 6, 6})}, {}, 22); }, "larger than the padded input");
  expect_node_error([&] {
    run1("Conv", {x, iota_f32({2, 4, 3, 3})}, {Attribute::make_ints("kernel_shape", {2, 2})}, 22);
  }, "kernel_shape [2,2] does not match");
  expect_node_error([&] { run1("Conv", {x, iota_f32({2, 4, 3, 3}), iota_f32({3})}, {}, 22); }, "bias");
  expect_node_error([&] { run1("Conv", {x, iota_f32({2, 4, 3, 3})}, {Attribute::make_ints("strides", {1})}, 22); },
                    "'strides' has 1 entries");
  expect_node_error([&] { run1("Conv", {x, iota_f32({2, 4, 3, 3})}, {Attribute::make_string("auto_pad", "SAME")}, 22); },
                    "unknown auto_pad");
}

}  // namespace
}  // namespace octet
