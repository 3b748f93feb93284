// Reference Conv for any number of spatial dims (1-D Whisper stems, 2-D ViT patch
// embeddings, 3-D video), with groups, strides, dilations, explicit or automatic pads
// and an optional bias.
//
// Shapes: X [N, C, D1..Dn], W [M, C/group, k1..kn], B [M], Y [N, M, O1..On] with
//   NOTSET:      O = floor((D + pad_begin + pad_end - ((k-1)*dilation + 1)) / stride) + 1
//   VALID:       the same with zero pads
//   SAME_UPPER/  O = ceil(D / stride); total pad = max(0, (O-1)*stride + (k-1)*dilation
//   SAME_LOWER:  + 1 - D), the odd element at the end (UPPER) or the beginning (LOWER).
// For a block of output positions the receptive fields are gathered into columns (zeros
// where they hang over the padding), then each filter of the group is applied to the
// block as row updates (im2col + GEMM, blocked so memory stays small).
#include <algorithm>

#include "kernels/kernel.h"
#include "kernels/ref/ref_linalg_common.h"

namespace octet {
namespace ref_linalg {
namespace {

constexpr int64_t kPositionsPerBlock = 256;

struct ConvGeometry {
  int64_t spatial = 0;                       // number of spatial dims
  std::vector<int64_t> in, kernel, out;      // spatial sizes
  std::vector<int64_t> strides, dilations, pad_begin;
};

std::vector<int64_t> ints_or(const KernelContext& ctx, const char* name, size_t n, int64_t fallback) {
  std::vector<int64_t> v = ctx.node().attr_ints(name, std::vector<int64_t>(n, fallback));
  if (v.size() != n) ctx.fail("attribute '", name, "' has ", v.size(), " entries, expected ", n);
  return v;
}

ConvGeometry geometry(const KernelContext& ctx, const Tensor& X, const Tensor& W) {
  ConvGeometry g;
  g.spatial = X.rank() - 2;
  const size_t n = static_cast<size_t>(g.spatial);
  g.in.assign(X.shape().begin() + 2, X.shape().end());
  g.kernel.assign(W.shape().begin() + 2, W.shape().end());
  if (ctx.node().has_attr("kernel_shape") && ctx.node().attr_ints("kernel_shape") != g.kernel)
    ctx.fail("kernel_shape ", shape_to_string(ctx.node().attr_ints("kernel_shape")),
             " does not match W ", W.describe());
  g.strides = ints_or(ctx, "strides", n, 1);
  g.dilations = ints_or(ctx, "dilations", n, 1);
  std::vector<int64_t> pads = ints_or(ctx, "pads", 2 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (g.strides[i] < 1 || g.dilations[i] < 1)
      ctx.fail("strides ", shape_to_string(g.strides), " and dilations ", shape_to_string(g.dilations),
               " must be positive");
    if (pads[i] < 0 || pads[n + i] < 0) ctx.fail("pads ", shape_to_string(pads), " must not be negative");
  }
  const std::string auto_pad = ctx.node().attr_string("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (!same && auto_pad != "VALID" && auto_pad != "NOTSET")
    ctx.fail("unknown auto_pad '", auto_pad, "'");
  g.out.resize(n);
  g.pad_begin.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t extent = (g.kernel[i] - 1) * g.dilations[i] + 1;
    int64_t begin = pads[i], end = pads[n + i];
    if (auto_pad == "VALID") begin = end = 0;
    if (same) {
      const int64_t out = (g.in[i] + g.strides[i] - 1) / g.strides[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * g.strides[i] + extent - g.in[i]);
      begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end = total - begin;
    }
    const int64_t padded = g.in[i] + begin + end;
    if (padded < extent)
      ctx.fail("spatial dim ", i, ": the kernel (extent ", extent, ") is larger than the padded input (",
               padded, ") of X ", X.describe());
    g.out[i] = (padded - extent) / g.strides[i] + 1;
    g.pad_begin[i] = begin;
  }
  return g;
}

void conv_kernel(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor* B = ctx.optional_input(2);
  if (X.dtype() != W.dtype() || (B && B->dtype() != X.dtype()))
    ctx.fail("X ", X.describe(), ", W ", W.describe(), B ? " and B " + B->describe() : std::string(),
             " have different types");
  if (X.rank() < 3 || W.rank() != X.rank())
    ctx.fail("X ", X.describe(), " and W ", W.describe(), " must have equal rank >= 3");
  const int64_t group = ctx.node().attr_int("group", 1);
  const int64_t batch = X.shape()[0], channels = X.shape()[1], filters = W.shape()[0];
  if (group < 1 || channels % group != 0 || filters % group != 0 || W.shape()[1] != channels / group)
    ctx.fail("X ", X.describe(), " and W ", W.describe(), " do not fit group ", group,
             " (need C % group == 0, M % group == 0, W dim 1 == C / group)");
  if (B && (B->rank() != 1 || B->shape()[0] != filters))
    ctx.fail("bias ", B->describe(), " must be 1-D with ", filters, " elements");
  const ConvGeometry g = geometry(ctx, X, W);
  std::vector<int64_t> out_shape = {batch, filters};
  out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
  Tensor& out = ctx.allocate_output(0, X.dtype(), out_shape);

  const int64_t in_size = shape_numel(g.in), out_size = shape_numel(g.out);
  const int64_t kernel_size = shape_numel(g.kernel);
  const int64_t group_channels = channels / group, group_filters = filters / group;
  const int64_t column_size = group_channels * kernel_size;  // = one filter's weights
  const int64_t n = g.spatial;
  // Per kernel tap: its offset (dilated) along each spatial dim.
  std::vector<int64_t> tap_offset(kernel_size * n);
  for (int64_t t = 0; t < kernel_size; ++t)
    for (int64_t d = n - 1, rest = t; d >= 0; --d) {
      tap_offset[t * n + d] = (rest % g.kernel[d]) * g.dilations[d];
      rest /= g.kernel[d];
    }

  dispatch(ctx, X.dtype(), [&](auto tag) {
    using Acc = decltype(tag);
    const std::vector<Acc> x = load<Acc>(X), w = load<Acc>(W);
    const std::vector<Acc> bias = B ? load<Acc>(*B) : std::vector<Acc>(filters, Acc{0});
    std::vector<Acc> y(static_cast<size_t>(out.numel()), Acc{0});
    const int64_t block = std::min<int64_t>(kPositionsPerBlock, std::max<int64_t>(out_size, 1));
    std::vector<Acc> columns(static_cast<size_t>(column_size * block));  // [column_size, block]
    std::vector<int64_t> tap_src(kernel_size * block);  // input offset per (tap, position); -1: padding
    std::vector<int64_t> pos(n, 0);
    for (int64_t p0 = 0; p0 < out_size; p0 += block) {
      const int64_t nb = std::min(block, out_size - p0);
      for (int64_t j = 0; j < nb; ++j) {
        for (int64_t t = 0; t < kernel_size; ++t) {
          int64_t src = 0;
          for (int64_t d = 0; d < n && src >= 0; ++d) {
            const int64_t c = pos[d] * g.strides[d] - g.pad_begin[d] + tap_offset[t * n + d];
            src = c < 0 || c >= g.in[d] ? -1 : src * g.in[d] + c;
          }
          tap_src[t * nb + j] = src;
        }
        for (int64_t d = n - 1; d >= 0 && ++pos[d] == g.out[d]; --d) pos[d] = 0;
      }
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t gr = 0; gr < group; ++gr) {
          const Acc* x_group = x.data() + (b * channels + gr * group_channels) * in_size;
          for (int64_t c = 0; c < group_channels; ++c)
            for (int64_t t = 0; t < kernel_size; ++t) {
              Acc* col = columns.data() + (c * kernel_size + t) * nb;
              for (int64_t j = 0; j < nb; ++j) {
                const int64_t src = tap_src[t * nb + j];
                col[j] = src < 0 ? Acc{0} : x_group[c * in_size + src];
              }
            }
          // y[f, p0:p0+nb] = sum_i w[f, i] * columns[i, :] (+ bias): per output the same
          // in-order sum as a dot product, written as row updates the compiler vectorizes.
          for (int64_t f = gr * group_filters; f < (gr + 1) * group_filters; ++f) {
            const Acc* filter = w.data() + f * column_size;
            Acc* y_row = y.data() + (b * filters + f) * out_size + p0;
            for (int64_t i = 0; i < column_size; ++i) {
              const Acc wv = filter[i];
              const Acc* col = columns.data() + i * nb;
              for (int64_t j = 0; j < nb; ++j) y_row[j] += wv * col[j];
            }
            for (int64_t j = 0; j < nb; ++j) y_row[j] += bias[f];
          }
        }
    }
    store(out, y);
  });
}

}  // namespace

void register_conv(KernelRegistry& r) {
  r.add("", "Conv", conv_kernel);
}

}  // namespace ref_linalg
}  // namespace octet
