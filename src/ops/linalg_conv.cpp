// Conv and ConvTranspose over 1, 2 or 3 spatial dims. Output sizes use Dim::floor_div so
// a symbolic image size stays symbolic (floordiv(h - 1, 2) + 1) and a known one folds.
#include <string>

#include "ops/op_registry.h"
#include "ops/shape_helpers.h"

namespace octet {

using namespace shape_rules;

namespace {

struct ConvAttrs {
  int64_t group = 1;
  std::string auto_pad;
  std::vector<int64_t> strides, dilations, pads;
  std::optional<std::vector<int64_t>> kernel;  // from the attribute or W's dims
};

// Reads the attributes shared by Conv and ConvTranspose for `spatial` dims and checks
// their lengths and signs.
ConvAttrs read_conv_attrs(const InferContext& ctx, int64_t spatial) {
  const Node& n = ctx.node();
  ConvAttrs a;
  a.group = n.attr_int("group", 1);
  if (a.group < 1) ctx.fail("group ", a.group, " must be >= 1");
  a.auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (a.auto_pad != "NOTSET" && a.auto_pad != "VALID" && a.auto_pad != "SAME_UPPER" && a.auto_pad != "SAME_LOWER")
    ctx.fail("unknown auto_pad '", a.auto_pad, "'");
  a.strides = n.attr_ints("strides", std::vector<int64_t>(spatial, 1));
  a.dilations = n.attr_ints("dilations", std::vector<int64_t>(spatial, 1));
  a.pads = n.attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  auto check = [&](const std::vector<int64_t>& v, int64_t len, const char* name, int64_t min) {
    if (static_cast<int64_t>(v.size()) != len)
      ctx.fail("'", name, "' ", ints_to_string(v), " needs ", len, " entries for ", spatial, " spatial dims");
    for (int64_t x : v)
      if (x < min) ctx.fail("'", name, "' ", ints_to_string(v), " has a value below ", min);
  };
  check(a.strides, spatial, "strides", 1);
  check(a.dilations, spatial, "dilations", 1);
  check(a.pads, 2 * spatial, "pads", 0);
  if (n.has_attr("kernel_shape")) {
    a.kernel = n.attr_ints("kernel_shape");
    check(*a.kernel, spatial, "kernel_shape", 1);
  } else if (const auto& w = ctx.input_dims(1)) {
    std::vector<int64_t> k;
    for (size_t i = 2; i < w->size(); ++i) {
      auto c = (*w)[i].constant();
      if (!c) return a;  // a symbolic kernel size: spatial output dims stay unknown
      k.push_back(*c);
    }
    a.kernel = k;
  }
  if (a.kernel && n.has_attr("kernel_shape")) {
    if (const auto& w = ctx.input_dims(1))
      for (int64_t i = 0; i < spatial; ++i)
        if (auto c = (*w)[i + 2].constant(); c && *c != (*a.kernel)[i])
          ctx.fail("kernel_shape ", ints_to_string(*a.kernel), " does not match W ", ctx.input_type(1).to_string());
  }
  return a;
}

// Rank of the convolution (N, C and the spatial dims) from X or W; fails if they differ.
std::optional<int64_t> conv_rank(const InferContext& ctx) {
  const auto& x = ctx.input_dims(0);
  const auto& w = ctx.input_dims(1);
  if (x && w && x->size() != w->size())
    ctx.fail("X ", ctx.input_type(0).to_string(), " and W ", ctx.input_type(1).to_string(), " differ in rank");
  std::optional<int64_t> rank;
  if (x) rank = static_cast<int64_t>(x->size());
  else if (w) rank = static_cast<int64_t>(w->size());
  if (rank && *rank < 3) ctx.fail("needs at least one spatial dim, got rank ", *rank);
  return rank;
}

void check_dtypes(const InferContext& ctx) {
  for (size_t i = 1; i < 3; ++i)
    if (ctx.has_input(i) && ctx.input_dtype(i) != ctx.input_dtype(0))
      ctx.fail("input ", i, " is ", ctx.input_type(i).to_string(), " but X is ", ctx.input_type(0).to_string());
}

void check_bias(const InferContext& ctx, const Dim& channels) {
  if (!ctx.has_input(2)) return;
  const auto& bias = ctx.input_dims(2);
  if (!bias) return;
  if (bias->size() != 1) ctx.fail("bias ", ctx.input_type(2).to_string(), " must be 1-D");
  unify_dims(ctx, (*bias)[0], channels, "bias " + ctx.input_type(2).to_string() + " does not match the output channels");
}

void infer_conv(InferContext& ctx) {
  check_dtypes(ctx);
  auto rank = conv_rank(ctx);
  if (!rank) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return;
  }
  const int64_t spatial = *rank - 2;
  ConvAttrs a = read_conv_attrs(ctx, spatial);
  const auto& x = ctx.input_dims(0);
  const auto& w = ctx.input_dims(1);
  if (x && w) {
    auto c = (*x)[1].constant(), wc = (*w)[1].constant();
    if (c && wc && *c != *wc * a.group)
      ctx.fail("X has ", *c, " channels but W ", ctx.input_type(1).to_string(), " with group ", a.group, " expects ",
               *wc * a.group);
  }
  Dim m = w ? (*w)[0] : Dim::fresh("conv_m");
  if (auto cm = m.constant(); cm && *cm % a.group != 0)
    ctx.fail("W has ", *cm, " output channels, not a multiple of group ", a.group);
  check_bias(ctx, m);
  DimVector out{x ? (*x)[0] : Dim::fresh("conv_n"), m};
  for (int64_t i = 0; i < spatial; ++i) {
    if (!x || !a.kernel) {
      out.push_back(Dim::fresh("conv"));
      continue;
    }
    const Dim& in = (*x)[i + 2];
    const int64_t s = a.strides[i];
    const int64_t reach = a.dilations[i] * ((*a.kernel)[i] - 1) + 1;  // span of one kernel window
    Dim o;
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      o = ceil_div(in, s);
    } else {
      Dim padded = a.auto_pad == "VALID" ? in : in + a.pads[i] + a.pads[i + spatial];
      o = Dim::floor_div(padded - reach, s) + 1;
    }
    if (auto c = o.constant(); c && *c < 1)
      ctx.fail("spatial dim ", i, " of X ", ctx.input_type(0).to_string(), " is too small for kernel ",
               ints_to_string(*a.kernel), " (output size ", *c, ")");
    out.push_back(o);
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
}

void infer_conv_transpose(InferContext& ctx) {
  check_dtypes(ctx);
  auto rank = conv_rank(ctx);
  if (!rank) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return;
  }
  const int64_t spatial = *rank - 2;
  ConvAttrs a = read_conv_attrs(ctx, spatial);
  const Node& n = ctx.node();
  auto out_pad = n.attr_ints("output_padding", std::vector<int64_t>(spatial, 0));
  if (static_cast<int64_t>(out_pad.size()) != spatial)
    ctx.fail("'output_padding' ", ints_to_string(out_pad), " needs ", spatial, " entries");
  const auto& x = ctx.input_dims(0);
  const auto& w = ctx.input_dims(1);
  if (x && w) unify_dims(ctx, (*x)[1], (*w)[0], "X channels do not match W " + ctx.input_type(1).to_string());
  Dim m = w ? (*w)[1] * a.group : Dim::fresh("convt_m");
  check_bias(ctx, m);
  DimVector out{x ? (*x)[0] : Dim::fresh("convt_n"), m};
  std::optional<std::vector<int64_t>> explicit_shape;
  if (n.has_attr("output_shape")) {
    explicit_shape = n.attr_ints("output_shape");
    // Either the spatial sizes or the full shape; the spatial ones are the last.
    if (static_cast<int64_t>(explicit_shape->size()) < spatial)
      ctx.fail("'output_shape' ", ints_to_string(*explicit_shape), " needs ", spatial, " spatial sizes");
  }
  for (int64_t i = 0; i < spatial; ++i) {
    if (explicit_shape) {
      out.push_back((*explicit_shape)[explicit_shape->size() - spatial + i]);
      continue;
    }
    if (!x || !a.kernel) {
      out.push_back(Dim::fresh("convt"));
      continue;
    }
    const Dim& in = (*x)[i + 2];
    const int64_t s = a.strides[i];
    Dim o;
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      o = in * s;
    } else {
      const int64_t pads = a.auto_pad == "VALID" ? 0 : a.pads[i] + a.pads[i + spatial];
      o = (in - 1) * s + out_pad[i] + a.dilations[i] * ((*a.kernel)[i] - 1) + 1 - pads;
    }
    if (auto c = o.constant(); c && *c < 1)
      ctx.fail("output spatial dim ", i, " would be ", *c);
    out.push_back(o);
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
}

}  // namespace

namespace shape_rules {
void register_linalg_conv_ops(OpRegistry& r) {
  add_rule<infer_conv>(r, "Conv");
  add_rule<infer_conv_transpose>(r, "ConvTranspose");
}
}  // namespace shape_rules

}  // namespace octet
