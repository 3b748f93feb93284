// Reference BatchNormalization (inference) and the vision family's registration
// (Resize lives in ref_vision_resize.cpp).
//
//   Y[n, c, ...] = (X[n, c, ...] - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + B[c]
// computed in double, rounded once to X's type. training_mode=1 (batch statistics) is
// rejected: octet runs inference.
#include <cmath>

#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_math_dtype.h"

namespace octet::ref {

void register_resize(KernelRegistry& r);  // ref_vision_resize.cpp

namespace {

std::vector<double> per_channel(const KernelContext& ctx, const Tensor& t, int64_t channels, const char* what) {
  if (t.rank() != 1 || t.shape()[0] != channels)
    ctx.fail(what, " ", t.describe(), " must be 1-D with one value for each of the ", channels, " channels");
  std::vector<double> out;
  dispatch<FloatTypes>(ctx, t.dtype(), what, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* p = data_as<S>(t);
    for (int64_t i = 0; i < channels; ++i) out.push_back(static_cast<double>(load(p[i])));
  });
  return out;
}

void batch_norm_kernel(KernelContext& ctx) {
  const Node& n = ctx.node();
  if (n.attr_int("training_mode", 0) != 0)
    ctx.fail("training_mode=1 (batch statistics) is not supported: octet runs inference only");
  for (size_t i = 1; i < ctx.num_outputs(); ++i)
    if (ctx.output_wanted(i)) ctx.fail("output ", i, " exists only in training; octet runs inference only");
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("X ", x.describe(), " needs rank >= 2 (N, C, ...)");
  const int64_t channels = x.shape()[1];
  const std::vector<double> scale = per_channel(ctx, ctx.input(1), channels, "scale");
  const std::vector<double> bias = per_channel(ctx, ctx.input(2), channels, "B");
  const std::vector<double> mean = per_channel(ctx, ctx.input(3), channels, "mean");
  const std::vector<double> var = per_channel(ctx, ctx.input(4), channels, "var");
  const double epsilon = n.attr_float("epsilon", 1e-5f);
  const int64_t batch = x.shape()[0];
  const int64_t inner = channels == 0 || batch == 0 ? 0 : x.numel() / (batch * channels);
  Tensor& out = ctx.allocate_output_uninitialized(0, x.dtype(), x.shape());
  dispatch<FloatTypes>(ctx, x.dtype(), "X", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* src = data_as<S>(x);
    S* dst = data_as<S>(out);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t c = 0; c < channels; ++c) {
        const double inv_std = 1.0 / std::sqrt(var[c] + epsilon);
        const int64_t base = (b * channels + c) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          const double v = static_cast<double>(load(src[base + i]));
          dst[base + i] = store_double<S>((v - mean[c]) * inv_std * scale[c] + bias[c]);
        }
      }
  });
}

}  // namespace
}  // namespace octet::ref

namespace octet {
void register_ref_vision(KernelRegistry& r) {
  r.add("", "BatchNormalization", ref::batch_norm_kernel);
  ref::register_resize(r);
}
}  // namespace octet
