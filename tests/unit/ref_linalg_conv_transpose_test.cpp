// Reference kernel: ConvTranspose, against a naive gather-form definition in double.
#include "ref_shape_testing.h"

namespace octet {
namespace {

using namespace reftest;
using Shape = std::vector<int64_t>;
using F = std::vector<float>;

struct DeconvParams {
  Shape strides, dilations, pads, output_padding;  // pads: begins then ends
  int64_t group = 1;
};

// Y[b, m, o] = B[m] + sum over c in m's group, taps t, input positions p with
// p * stride - pad_begin + t * dilation == o of X[b, c, p] * W[c, m % (M/group), t]:
// written as a gather over outputs (the kernel scatters over inputs).
F naive_deconv(const F& x, const Shape& xs, const F& w, const Shape& ws, const F* bias, const DeconvParams& p,
               Shape* out_shape) {
  const size_t n = xs.size() - 2;
  const int64_t group_filters = ws[1], filters = ws[1] * p.group, group_channels = xs[1] / p.group;
  Shape out = {xs[0], filters};
  for (size_t d = 0; d < n; ++d)
    out.push_back(p.strides[d] * (xs[2 + d] - 1) + p.output_padding[d] + (ws[2 + d] - 1) * p.dilations[d] + 1 -
                  p.pads[d] - p.pads[n + d]);
  *out_shape = out;
  Shape sp_out(out.begin() + 2, out.end()), sp_k(ws.begin() + 2, ws.end()), sp_in(xs.begin() + 2, xs.end());
  auto unflatten = [](int64_t flat, const Shape& s) {
    Shape idx(s.size());
    for (size_t d = s.size(); d-- > 0;) {
      idx[d] = flat % s[d];
      flat /= s[d];
    }
    return idx;
  };
  F y(static_cast<size_t>(shape_numel(out)));
  for (int64_t b = 0; b < out[0]; ++b)
    for (int64_t m = 0; m < filters; ++m)
      for (int64_t o = 0; o < shape_numel(sp_out); ++o) {
        const Shape oi = unflatten(o, sp_out);
        double s = bias ? (*bias)[m] : 0.0;
        const int64_t g = m / group_filters, f = m % group_filters;
        for (int64_t c = g * group_channels; c < (g + 1) * group_channels; ++c)
          for (int64_t k = 0; k < shape_numel(sp_k); ++k) {
            const Shape ki = unflatten(k, sp_k);
            int64_t xoff = b * xs[1] + c;
            bool hit = true;
            for (size_t d = 0; d < n; ++d) {
              const int64_t num = oi[d] + p.pads[d] - ki[d] * p.dilations[d];
              hit &= num >= 0 && num % p.strides[d] == 0 && num / p.strides[d] < sp_in[d];
              xoff = xoff * sp_in[d] + (hit ? num / p.strides[d] : 0);
            }
            if (hit) s += double(x[xoff]) * w[(c * group_filters + f) * shape_numel(sp_k) + k];
          }
        y[(b * filters + m) * shape_numel(sp_out) + o] = static_cast<float>(s);
      }
  return y;
}

void check_deconv(const Shape& xs, const Shape& ws, const DeconvParams& p, bool with_bias, uint32_t seed) {
  F x = noise(shape_numel(xs), seed), w = noise(shape_numel(ws), seed + 1), b = noise(ws[1] * p.group, seed + 2);
  Shape want_shape;
  F want = naive_deconv(x, xs, w, ws, with_bias ? &b : nullptr, p, &want_shape);
  Inputs in = {f32(xs, x), f32(ws, w)};
  if (with_bias) in.push_back(f32({ws[1] * p.group}, b));
  Attrs a = {Attribute::make_ints("strides", p.strides), Attribute::make_ints("dilations", p.dilations),
             Attribute::make_ints("pads", p.pads), Attribute::make_ints("output_padding", p.output_padding),
             Attribute::make_int("group", p.group)};
  Tensor y = run1("ConvTranspose", in, a, 22);
  ASSERT_EQ(y.shape(), want_shape);
  expect_close(values<float>(y), want, 1e-4f);
}

TEST(RefConvTranspose, AgainstNaiveIn1d2d3d) {
  check_deconv({1, 3, 5}, {3, 2, 3}, {{2}, {1}, {0, 0}, {1}, 1}, true, 1);                      // 1-D, output_padding
  check_deconv({2, 4, 16, 16}, {4, 3, 4, 4}, {{2, 2}, {1, 1}, {1, 1, 1, 1}, {0, 0}, 1}, true, 2);  // the decoder's upconv
  check_deconv({1, 4, 5, 3}, {4, 2, 3, 2}, {{3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 0}, 2}, true, 3);   // groups, dilations
  check_deconv({1, 4, 3, 3}, {4, 1, 3, 3}, {{1, 1}, {1, 1}, {0, 0, 0, 0}, {0, 0}, 4}, false, 4);  // depthwise
  check_deconv({1, 2, 2, 3, 2}, {2, 3, 2, 2, 3}, {{2, 1, 2}, {1, 2, 1}, {0, 1, 1, 1, 0, 0}, {1, 0, 0}, 1}, true, 5);
  check_deconv({1, 1, 1, 1}, {1, 1, 1, 1}, {{1, 1}, {1, 1}, {0, 0, 0, 0}, {0, 0}, 1}, true, 6);   // 1x1 everything
  check_deconv({1, 2, 4, 4}, {2, 2, 3, 3}, {{1, 1}, {1, 1}, {2, 2, 2, 2}, {0, 0}, 1}, false, 7); // pads eat the border
}

TEST(RefConvTranspose, OutputShapeAndAutoPad) {
  // The ONNX examples: X 3x3 ramp, W two 3x3 all-ones filters, strides [3, 2].
  Tensor x = f32({1, 1, 3, 3}, iota(9)), w = f32({1, 2, 3, 3}, F(18, 1.0f));
  Attrs s = {Attribute::make_ints("strides", {3, 2})};
  Tensor natural = run1("ConvTranspose", {x, w}, {s[0], Attribute::make_ints("output_padding", {1, 1})}, 22);
  Tensor shaped = run1("ConvTranspose", {x, w}, {s[0], Attribute::make_ints("output_shape", {10, 8})}, 22);
  ASSERT_EQ(natural.shape(), (Shape{1, 2, 10, 8}));
  EXPECT_EQ(values<float>(shaped), values<float>(natural));  // output_shape one beyond: the end padded
  // SAME_UPPER, stride 2 on 3: output 6; total padding 1 goes at the end (the ONNX reference).
  Tensor same = run1("ConvTranspose", {x, w}, {Attribute::make_ints("strides", {2, 2}),
                                               Attribute::make_string("auto_pad", "SAME_UPPER")}, 22);
  Tensor full = run1("ConvTranspose", {x, w}, {Attribute::make_ints("strides", {2, 2})}, 22);
  ASSERT_EQ(same.shape(), (Shape{1, 2, 6, 6}));
  ASSERT_EQ(full.shape(), (Shape{1, 2, 7, 7}));
  const F a = values<float>(same), b = values<float>(full);
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 6; ++j) EXPECT_EQ(a[(c * 6 + i) * 6 + j], b[(c * 7 + i) * 7 + j]);
  Tensor lower = run1("ConvTranspose", {x, w}, {Attribute::make_ints("strides", {2, 2}),
                                                Attribute::make_string("auto_pad", "SAME_LOWER")}, 22);
  const F l = values<float>(lower);
  EXPECT_EQ(l[0], b[1 * 7 + 1]);  // SAME_LOWER drops the first row and column
}

TEST(RefConvTranspose, EmptyBatchAndErrors) {
  Tensor y = run1("ConvTranspose", {f32({0, 2, 3, 3}, {}), f32({2, 1, 2, 2}, F(8, 1.0f))}, {}, 22);
  EXPECT_EQ(y.shape(), (Shape{0, 1, 4, 4}));
  expect_node_error([] { run1("ConvTranspose", {f32({1, 3, 3, 3}, F(27)), f32({2, 1, 2, 2}, F(8))}, {}, 22); },
                    "W dim 0 == C");
  expect_node_error([] {
    run1("ConvTranspose", {f32({1, 1, 3}, F(3)), f32({1, 1, 2}, F(2))}, {Attribute::make_ints("output_padding", {2})},
         22);
  }, "output_padding");
  expect_node_error([] {
    run1("ConvTranspose", {f32({1, 1, 1}, F(1)), f32({1, 1, 1}, F(1))}, {Attribute::make_ints("pads", {1, 1})}, 22);
  }, "output spatial dim 0 would be -1");
}

}  // namespace
}  // namespace octet
