// Image ops of convolutional decoders and ViT position-embedding interpolation:
// BatchNormalization (inference) and Resize.
//
// Opset differences handled here:
// - BatchNormalization: training_mode (14+) = 1 and the training-only outputs (running
//   mean/var, saved statistics) are rejected: octet runs inference. Scale/B may have a
//   type other than X from opset 15 (T1), mean/var likewise (T2).
// - Resize 10: inputs (X, scales), modes nearest/linear, asymmetric coordinates.
//   11-12: (X, roi, scales, sizes), scales required (empty when sizes is used),
//   tf_half_pixel_for_nn. 13+: roi and scales optional, tf_half_pixel_for_nn gone.
//   18: antialias, axes, keep_aspect_ratio_policy. 19: half_pixel_symmetric.
#include <algorithm>
#include <cmath>

#include "ops/math_helpers.h"
#include "ops/op_families.h"
#include "ops/resize_attrs.h"
#include "ops/shape_helpers.h"

namespace octet {
namespace {

using math::describe_input;
using math::require_type;
using shape_rules::unify_dims;

// ---------------------------------------------------------------- BatchNormalization

void infer_batch_norm(InferContext& ctx) {
  const Node& n = ctx.node();
  const int64_t opset = onnx_opset(ctx);
  if (n.attr_int("training_mode", 0) != 0)
    ctx.fail("training_mode=", n.attr_int("training_mode", 0),
             " (statistics of the batch, running-stat updates) is not supported: octet runs inference only");
  for (size_t i = 1; i < ctx.num_outputs(); ++i)
    if (n.output(i))
      ctx.fail("output ", i, " (running or saved statistics) exists only in training; octet runs inference only");
  if (n.has_attr("spatial") && n.attr_int("spatial", 1) != 1)
    ctx.fail("spatial=0 (per-activation statistics, opset < 9) is not supported");
  require_type(ctx, 0, math::is_float_type, math::kFloatTypes);
  for (size_t i = 1; i < 5; ++i) {
    require_type(ctx, i, math::is_float_type, math::kFloatTypes);
    // Before 15 all five share T; from 15 scale/B share T1 and mean/var share T2.
    const size_t partner = opset >= 15 ? (i <= 2 ? 1 : 3) : 0;
    if (ctx.input_dtype(i) != ctx.input_dtype(partner))
      ctx.fail(describe_input(ctx, i), " must have the type of ", describe_input(ctx, partner));
  }
  const auto& x = ctx.input_dims(0);
  if (x && x->size() < 2) ctx.fail(describe_input(ctx, 0), " needs rank >= 2 (N, C, ...)");
  Dim channels = x ? (*x)[1] : Dim::fresh("channels");
  for (size_t i = 1; i < 5; ++i) {
    const auto& d = ctx.input_dims(i);
    if (!d) continue;
    if (d->size() != 1) ctx.fail(describe_input(ctx, i), " must be 1-D with one value per channel");
    channels = unify_dims(ctx, channels, (*d)[0], describe_input(ctx, i) + " does not match X's channels");
  }
  std::optional<DimVector> out = x;
  if (out) (*out)[1] = channels;
  ctx.set_output(0, ctx.input_dtype(0), out);
}

// ---------------------------------------------------------------- Resize

// The floats of a constant input, or nullopt.
std::optional<std::vector<float>> constant_floats(const InferContext& ctx, size_t i) {
  const Tensor* t = ctx.input_constant(i);
  if (!t || t->rank() > 1) return std::nullopt;
  return t->to_float_vector();
}

// Element count of a 1-D input when its length is known (constant or a known dim).
std::optional<int64_t> known_length(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return int64_t{0};
  const auto& d = ctx.input_dims(i);
  if (!d) return std::nullopt;
  if (d->size() != 1) ctx.fail(describe_input(ctx, i), " must be 1-D");
  return (*d)[0].constant();
}

// Same rank, every dim unknown.
std::optional<DimVector> fresh_or_unknown(const std::optional<DimVector>& x) {
  if (!x) return std::nullopt;
  return shape_rules::fresh_dims(x->size(), "resized");
}

void infer_resize(InferContext& ctx) {
  const int64_t opset = onnx_opset(ctx);
  const ResizeAttrs a = read_resize_attrs(ctx.node(), opset, [&](const std::string& why) { ctx.fail(why); });
  require_type(ctx, 0, [](DType t) { return math::is_numeric_type(t); }, math::kNumericTypes);
  const ResizeInputs in = resize_inputs(opset);
  if (in.roi >= 0 && ctx.has_input(in.roi)) require_type(ctx, in.roi, math::is_float_type, math::kFloatTypes);
  if (in.scales >= 0 && ctx.has_input(in.scales) && ctx.input_dtype(in.scales) != DType::Float32)
    ctx.fail(describe_input(ctx, in.scales), " must be float32");
  if (in.sizes >= 0 && ctx.has_input(in.sizes) && ctx.input_dtype(in.sizes) != DType::Int64)
    ctx.fail(describe_input(ctx, in.sizes), " must be int64");

  // Which of scales/sizes is used: a present input whose length is not known to be 0
  // (opset 11-12 require scales and pass an empty one beside sizes).
  const std::optional<int64_t> n_scales = in.scales >= 0 ? known_length(ctx, in.scales) : int64_t{0};
  const std::optional<int64_t> n_sizes = in.sizes >= 0 ? known_length(ctx, in.sizes) : int64_t{0};
  bool has_scales = in.scales >= 0 && ctx.has_input(in.scales) && n_scales != int64_t{0};
  bool has_sizes = in.sizes >= 0 && ctx.has_input(in.sizes) && n_sizes != int64_t{0};
  if (has_scales && has_sizes) {
    if (n_scales && n_sizes) ctx.fail("has both scales and sizes; exactly one of them may be given");
    if (n_sizes) has_scales = false;  // the other one's length is unknown: assume it empty
    else if (n_scales) has_sizes = false;
    else return ctx.set_output(0, ctx.input_dtype(0), fresh_or_unknown(ctx.input_dims(0)));
  }
  if (!has_scales && !has_sizes) ctx.fail("has neither scales nor sizes; exactly one of them must be given");
  const DType t = ctx.input_dtype(0);
  const auto& x = ctx.input_dims(0);
  if (!x) return ctx.set_output(0, t, std::nullopt);

  const int64_t rank = static_cast<int64_t>(x->size());
  std::vector<int64_t> axes = a.axes;
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  axes = normalize_axes(ctx, axes, rank);
  const std::optional<int64_t> count = has_scales ? n_scales : n_sizes;
  if (count && *count != static_cast<int64_t>(axes.size()))
    ctx.fail(has_scales ? "scales" : "sizes", " has ", *count, " values but ", axes.size(),
             " axes are resized (the rank of X ", ctx.input_type(0).to_string(), " or the 'axes' attribute)");

  DimVector out = *x;
  auto unknown = [&] {
    for (int64_t axis : axes) out[axis] = Dim::fresh("resized");
    ctx.set_output(0, t, out);
  };
  if (has_sizes) {
    auto sizes = ctx.input_values(in.sizes);
    if (!sizes || sizes->size() != axes.size()) return unknown();
    for (const Dim& s : *sizes)
      if (auto c = s.constant(); c && *c < 0) ctx.fail("sizes has a negative value ", *c);
    if (a.keep_aspect_ratio_policy == "stretch") {
      for (size_t i = 0; i < axes.size(); ++i) out[axes[i]] = (*sizes)[i];
      return ctx.set_output(0, t, out);
    }
    // not_larger / not_smaller: one scale for all axes, from known sizes only.
    std::vector<int64_t> in_sizes, want;
    for (size_t i = 0; i < axes.size(); ++i) {
      auto c = (*x)[axes[i]].constant();
      auto s = (*sizes)[i].constant();
      if (!c || !s || *c == 0) return unknown();  // an empty axis: the kernel reports it
      in_sizes.push_back(*c);
      want.push_back(*s);
    }
    const std::vector<int64_t> sizes_out = resize_keep_aspect_sizes(in_sizes, want, a.keep_aspect_ratio_policy);
    for (size_t i = 0; i < axes.size(); ++i) {
      if (sizes_out[i] < 0) ctx.fail("sizes with keep_aspect_ratio_policy ", a.keep_aspect_ratio_policy, " are too large");
      out[axes[i]] = sizes_out[i];
    }
    return ctx.set_output(0, t, out);
  }
  auto scales = constant_floats(ctx, in.scales);
  if (!scales || scales->size() != axes.size()) return unknown();
  for (size_t i = 0; i < axes.size(); ++i) {
    const float s = (*scales)[i];
    if (!(s > 0) || !std::isfinite(s)) ctx.fail("scales ", s, " must be positive and finite");
    const Dim& d = (*x)[axes[i]];
    if (auto c = d.constant()) {
      if (static_cast<double>(*c) * s >= 9.0e15) ctx.fail("scales ", s, " makes axis ", axes[i], " too large");
      out[axes[i]] = resize_scaled_size(*c, s);
    } else if (s == std::floor(s) && s < 65536) {
      out[axes[i]] = d * static_cast<int64_t>(s);  // floor(d * k) == d * k for a whole k
    } else {
      out[axes[i]] = Dim::fresh("resized");
    }
  }
  ctx.set_output(0, t, out);
}

}  // namespace

void register_vision_ops(OpRegistry& r) {
  r.add(OpDef{"", "BatchNormalization", infer_batch_norm});
  r.add(OpDef{"", "Resize", infer_resize});
}

}  // namespace octet
