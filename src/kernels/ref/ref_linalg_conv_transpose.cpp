// Reference ConvTranspose (the gradient of Conv with respect to its input) for any
// number of spatial dims, with groups, strides, dilations, pads, output_padding,
// output_shape and auto_pad.
//
// Shapes: X [N, C, D1..Dn], W [C, M/group, k1..kn], B [M], Y [N, M, O1..On]. Every input
// pixel scatters its value times the filter into the output:
//   Y[n, m, p*stride - pad_begin + t*dilation] += X[n, c, p] * W[c, m - group_start, t]
// for input positions p and kernel taps t, dropping writes outside Y. Output sizes:
//   natural   = stride * (D - 1) + output_padding + (k - 1) * dilation + 1
//   NOTSET    O = natural - pad_begin - pad_end;  VALID: O = natural
//   SAME_*    O = D * stride;  output_shape: O as given (pads ignored)
// and for SAME_* / output_shape the total padding natural - O is split with the odd
// element at the end for SAME_UPPER, at the beginning otherwise (the ONNX reference's
// rule; floor division, so a negative total pads the end by one).
#include <algorithm>

#include "kernels/kernel.h"
#include "kernels/ref/ref_linalg_common.h"

namespace octet {
namespace ref_linalg {
namespace {

int64_t floor_half(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

std::vector<int64_t> ints_or(const KernelContext& ctx, const char* name, size_t n, int64_t fallback) {
  std::vector<int64_t> v = ctx.node().attr_ints(name, std::vector<int64_t>(n, fallback));
  if (v.size() != n) ctx.fail("attribute '", name, "' has ", v.size(), " entries, expected ", n);
  return v;
}

void conv_transpose_kernel(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor* B = ctx.optional_input(2);
  const DType t = X.dtype();
  if (t != DType::Float32 && t != DType::Float16 && t != DType::BFloat16 && t != DType::Float64)
    ctx.fail("X ", X.describe(), " must be a float type");
  if (W.dtype() != t || (B && B->dtype() != t))
    ctx.fail("X ", X.describe(), ", W ", W.describe(), B ? " and B " + B->describe() : std::string(),
             " have different types");
  if (X.rank() < 3 || W.rank() != X.rank())
    ctx.fail("X ", X.describe(), " and W ", W.describe(), " must have equal rank >= 3");
  const Node& node = ctx.node();
  const int64_t group = node.attr_int("group", 1);
  const int64_t batch = X.shape()[0], channels = X.shape()[1];
  if (group < 1 || channels % group != 0 || W.shape()[0] != channels)
    ctx.fail("X ", X.describe(), " and W ", W.describe(), " do not fit group ", group,
             " (need C % group == 0 and W dim 0 == C)");
  const int64_t group_channels = channels / group, group_filters = W.shape()[1], filters = group_filters * group;
  if (B && (B->rank() != 1 || B->shape()[0] != filters))
    ctx.fail("bias ", B->describe(), " must be 1-D with ", filters, " elements");

  const size_t n = static_cast<size_t>(X.rank() - 2);
  const std::vector<int64_t> in(X.shape().begin() + 2, X.shape().end());
  const std::vector<int64_t> kernel(W.shape().begin() + 2, W.shape().end());
  if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != kernel)
    ctx.fail("kernel_shape ", shape_to_string(node.attr_ints("kernel_shape")), " does not match W ", W.describe());
  const std::vector<int64_t> strides = ints_or(ctx, "strides", n, 1);
  const std::vector<int64_t> dilations = ints_or(ctx, "dilations", n, 1);
  const std::vector<int64_t> pads = ints_or(ctx, "pads", 2 * n, 0);
  const std::vector<int64_t> out_pad = ints_or(ctx, "output_padding", n, 0);
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (!same && auto_pad != "VALID" && auto_pad != "NOTSET") ctx.fail("unknown auto_pad '", auto_pad, "'");
  std::vector<int64_t> explicit_out = node.attr_ints("output_shape");
  if (!explicit_out.empty()) {
    if (explicit_out.size() < n) ctx.fail("output_shape ", shape_to_string(explicit_out), " needs ", n, " sizes");
    explicit_out.erase(explicit_out.begin(), explicit_out.end() - static_cast<int64_t>(n));
  }
  std::vector<int64_t> out(n), pad_begin(n);
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] < 1 || dilations[i] < 1)
      ctx.fail("strides ", shape_to_string(strides), " and dilations ", shape_to_string(dilations), " must be positive");
    if (out_pad[i] < 0 || out_pad[i] >= std::max(strides[i], dilations[i]))
      ctx.fail("output_padding ", shape_to_string(out_pad), " must be in [0, max(stride, dilation))");
    if (in[i] == 0) ctx.fail("spatial dim ", i, " of X ", X.describe(), " is empty");
    // In 128 bits: the attributes come from the file and may be absurd.
    const __int128 wide = static_cast<__int128>(strides[i]) * (in[i] - 1) + out_pad[i] +
                          static_cast<__int128>(kernel[i] - 1) * dilations[i] + 1;
    if (wide > (static_cast<__int128>(1) << 62))
      ctx.fail("output spatial dim ", i, " is too large (strides ", shape_to_string(strides), ", dilations ",
               shape_to_string(dilations), ")");
    const int64_t natural = static_cast<int64_t>(wide);
    if (!explicit_out.empty() || same) {
      out[i] = !explicit_out.empty() ? explicit_out[i] : in[i] * strides[i];
      if (out[i] < 0) ctx.fail("output_shape ", shape_to_string(explicit_out), " has a negative size");
      const int64_t total = natural - out[i];
      pad_begin[i] = auto_pad == "SAME_UPPER" ? floor_half(total) : total - floor_half(total);
    } else if (auto_pad == "VALID") {
      out[i] = natural;
    } else {
      if (pads[i] < 0 || pads[i + n] < 0) ctx.fail("pads ", shape_to_string(pads), " must not be negative");
      out[i] = natural - pads[i] - pads[i + n];
      pad_begin[i] = pads[i];
    }
    if (out[i] < 0) ctx.fail("output spatial dim ", i, " would be ", out[i], " for X ", X.describe());
  }
  std::vector<int64_t> out_shape = {batch, filters};
  out_shape.insert(out_shape.end(), out.begin(), out.end());
  int64_t numel = 1;
  for (int64_t d : out_shape)
    if (__builtin_mul_overflow(numel, d, &numel)) ctx.fail("output shape ", shape_to_string(out_shape), " overflows int64");
  Tensor& Y = ctx.allocate_output(0, t, out_shape);

  const int64_t in_size = shape_numel(in), out_size = shape_numel(out), kernel_size = shape_numel(kernel);
  // Where one tap's input positions land in an output plane; -1 outside it.
  std::vector<int64_t> target(static_cast<size_t>(in_size));
  auto aim = [&](int64_t tap) {
    for (int64_t p = 0; p < in_size; ++p) {
      int64_t dst = 0;
      for (int64_t d = static_cast<int64_t>(n) - 1, rest_t = tap, rest_p = p, stride = 1; d >= 0 && dst >= 0; --d) {
        const int64_t o = (rest_p % in[d]) * strides[d] - pad_begin[d] + (rest_t % kernel[d]) * dilations[d];
        if (o < 0 || o >= out[d]) dst = -1;
        else dst += o * stride;
        stride *= out[d];
        rest_t /= kernel[d];
        rest_p /= in[d];
      }
      target[p] = dst;
    }
  };

  dispatch(ctx, t, [&](auto tag) {
    using Acc = decltype(tag);
    const std::vector<Acc> x = load<Acc>(X), w = load<Acc>(W);
    std::vector<Acc> y(static_cast<size_t>(Y.numel()), Acc{0});
    if (B) {
      const std::vector<Acc> bias = load<Acc>(*B);
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t m = 0; m < filters; ++m)
          std::fill_n(y.begin() + (b * filters + m) * out_size, out_size, bias[m]);
    }
    for (int64_t tap = 0; tap < kernel_size; ++tap) {
      aim(tap);
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t c = 0; c < channels; ++c) {
          const int64_t gr = c / group_channels;
          const Acc* x_plane = x.data() + (b * channels + c) * in_size;
          for (int64_t f = 0; f < group_filters; ++f) {
            const int64_t m = gr * group_filters + f;
            Acc* y_plane = y.data() + (b * filters + m) * out_size;
            const Acc wv = w[(c * group_filters + f) * kernel_size + tap];
            for (int64_t p = 0; p < in_size; ++p)
              if (target[p] >= 0) y_plane[target[p]] += x_plane[p] * wv;
          }
        }
    }
    store(Y, y);
  });
}

}  // namespace

void register_conv_transpose(KernelRegistry& r) { r.add("", "ConvTranspose", conv_transpose_kernel); }

}  // namespace ref_linalg
}  // namespace octet
