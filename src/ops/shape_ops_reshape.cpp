// Ops that rearrange dims without touching data: Reshape, Flatten, Squeeze, Unsqueeze,
// Transpose. Each passes a small integer input's symbolic contents through when the
// output is still rank 0/1, so shape math survives exporters' [1] <-> scalar shuffles.
#include <algorithm>
#include <set>

#include "ops/op_registry.h"
#include "ops/shape_helpers.h"

namespace octet {

using namespace shape_rules;

namespace {

// Contents pass through a rank-0/1 output that holds the same number of elements.
void pass_values(InferContext& ctx, const std::optional<DimVector>& out_dims) {
  if (!out_dims || out_dims->size() > 1) return;
  auto values = ctx.input_values(0);
  if (!values) return;
  auto count = dims_product(*out_dims).constant();
  if (count && *count == static_cast<int64_t>(values->size())) ctx.set_output_values(0, *values);
}

void infer_reshape(InferContext& ctx) {
  const auto& in = ctx.input_dims(0);
  const int64_t opset = onnx_opset(ctx);
  std::optional<DimVector> target;
  std::optional<int64_t> target_len;
  if (opset < 5) {
    if (!ctx.node().has_attr("shape")) ctx.fail("needs a 'shape' attribute before opset 5");
    auto s = ctx.node().attr_ints("shape");
    target = DimVector(s.begin(), s.end());
  } else {
    if (ctx.node().has_attr("shape")) ctx.fail("'shape' is an input from opset 5, not an attribute");
    require_int64(ctx, 1, "the shape input");
    target = ctx.input_values(1);
    target_len = vector_length(ctx, 1, "the shape input");
  }
  const bool allowzero = opset >= 14 && ctx.node().attr_int("allowzero", 0) != 0;
  if (!target) {
    ctx.set_output(0, moved_type(ctx, 0, target_len ? std::optional(fresh_dims(*target_len, "reshape"))
                                                    : std::nullopt));
    return;
  }
  DimVector out(target->size());
  int64_t infer_at = -1;
  bool has_zero = false;
  for (size_t i = 0; i < target->size(); ++i) {
    const Dim& v = (*target)[i];
    auto c = v.constant();
    if (c && *c == 0 && !allowzero) {
      // 0 copies the input's dim at the same position.
      if (in && i >= in->size())
        ctx.fail("shape ", dims_to_string(*target), " copies dim ", i, " (value 0) but the input ",
                 ctx.input_type(0).to_string(), " has rank ", in->size());
      out[i] = in ? (*in)[i] : Dim::fresh("reshape");
    } else if (c && *c == -1) {
      if (infer_at >= 0) ctx.fail("shape ", dims_to_string(*target), " has more than one -1");
      infer_at = static_cast<int64_t>(i);
    } else if (c && *c < -1) {
      ctx.fail("invalid value ", *c, " in shape ", dims_to_string(*target));
    } else {
      has_zero |= c && *c == 0;
      out[i] = v;
    }
  }
  if (allowzero && has_zero && infer_at >= 0)
    ctx.fail("shape ", dims_to_string(*target), " has both 0 and -1 with allowzero=1");
  if (infer_at >= 0) {
    if (in) {
      Dim numel = dims_product(*in), rest = 1;
      for (size_t i = 0; i < out.size(); ++i)
        if (static_cast<int64_t>(i) != infer_at) rest = rest * out[i];
      auto cn = numel.constant(), cr = rest.constant();
      if (cr && *cr == 0)
        ctx.fail("cannot infer the -1 in shape ", dims_to_string(*target), " when the other dims hold 0 elements");
      if (cn && cr && *cn % *cr != 0)
        ctx.fail("cannot reshape ", ctx.input_type(0).to_string(), " (", *cn, " elements) to ",
                 dims_to_string(*target));
      // Exact for exporter patterns: floor_div(batch*seq*768, 64*batch) = 12*seq.
      out[infer_at] = Dim::floor_div(numel, rest);
    } else {
      out[infer_at] = Dim::fresh("reshape");
    }
  } else if (in) {
    auto cn = dims_product(*in).constant(), co = dims_product(out).constant();
    if (cn && co && *cn != *co)
      ctx.fail("cannot reshape ", ctx.input_type(0).to_string(), " (", *cn, " elements) to ",
               dims_to_string(out), " (", *co, " elements)");
  }
  ctx.set_output(0, moved_type(ctx, 0, out));
  pass_values(ctx, out);
}

void infer_flatten(InferContext& ctx) {
  const auto& in = ctx.input_dims(0);
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (!in) {
    ctx.set_output(0, moved_type(ctx, 0, fresh_dims(2, "flatten")));
    return;
  }
  const int64_t rank = static_cast<int64_t>(in->size());
  if (axis < -rank || axis > rank) ctx.fail("axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  DimVector outer(in->begin(), in->begin() + axis), inner(in->begin() + axis, in->end());
  ctx.set_output(0, moved_type(ctx, 0, DimVector{dims_product(outer), dims_product(inner)}));
}

void infer_squeeze(InferContext& ctx) {
  IntList axes = int_list_arg(ctx, "axes", 1, 13);
  const auto& in = ctx.input_dims(0);
  if (!in) {
    ctx.set_output(0, moved_type(ctx, 0, std::nullopt));
    return;
  }
  const int64_t rank = static_cast<int64_t>(in->size());
  std::set<int64_t> drop;
  if (axes.source == ListSource::Known) {
    for (int64_t a : normalize_axes(ctx, axes.values, rank)) {
      auto c = (*in)[a].constant();
      if (c && *c != 1)
        ctx.fail("cannot squeeze axis ", a, " of ", ctx.input_type(0).to_string(), ": its size is ", *c);
      drop.insert(a);
    }
  } else if (axes.source == ListSource::Unknown) {
    std::optional<DimVector> dims;
    if (axes.length && *axes.length <= rank) dims = fresh_dims(rank - *axes.length, "squeeze");
    ctx.set_output(0, moved_type(ctx, 0, dims));
    return;
  } else {
    std::vector<std::string> assumed;
    for (int64_t a = 0; a < rank; ++a) {
      auto c = (*in)[a].constant();
      if (c && *c == 1) drop.insert(a);
      if (!c) assumed.push_back((*in)[a].to_string());
    }
    if (!assumed.empty()) {
      std::string list;
      for (const auto& s : assumed) {
        if (!list.empty()) list += ", ";
        list += s;
      }
      ctx.warn("squeezing without axes: assuming the symbolic dims (" + list + ") are not 1");
    }
  }
  DimVector out;
  std::vector<int64_t> axis_map(rank, -1);
  for (int64_t a = 0; a < rank; ++a) {
    if (drop.count(a)) continue;
    axis_map[a] = static_cast<int64_t>(out.size());
    out.push_back((*in)[a]);
  }
  ctx.set_output(0, moved_type(ctx, 0, out, axis_map));
  pass_values(ctx, out);
}

void infer_unsqueeze(InferContext& ctx) {
  IntList axes = int_list_arg(ctx, "axes", 1, 13);
  if (axes.source == ListSource::Absent) ctx.fail("needs axes");
  const auto& in = ctx.input_dims(0);
  if (!in) {
    ctx.set_output(0, moved_type(ctx, 0, std::nullopt));
    return;
  }
  const int64_t rank = static_cast<int64_t>(in->size());
  if (axes.source == ListSource::Unknown) {
    std::optional<DimVector> dims;
    if (axes.length) dims = fresh_dims(rank + *axes.length, "unsqueeze");
    ctx.set_output(0, moved_type(ctx, 0, dims));
    return;
  }
  const int64_t out_rank = rank + static_cast<int64_t>(axes.values.size());
  auto inserted = normalize_axes(ctx, axes.values, out_rank);
  std::set<int64_t> ones(inserted.begin(), inserted.end());
  DimVector out;
  std::vector<int64_t> axis_map;
  int64_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (ones.count(i)) {
      out.push_back(1);
    } else {
      axis_map.push_back(i);
      out.push_back((*in)[next++]);
    }
  }
  ctx.set_output(0, moved_type(ctx, 0, out, axis_map));
  pass_values(ctx, out);
}

void infer_transpose(InferContext& ctx) {
  const auto& in = ctx.input_dims(0);
  const bool has_perm = ctx.node().has_attr("perm");
  std::vector<int64_t> perm = ctx.node().attr_ints("perm");
  if (!in) {
    ctx.set_output(0, moved_type(ctx, 0, has_perm ? std::optional(fresh_dims(perm.size(), "transpose"))
                                                  : std::nullopt));
    return;
  }
  const int64_t rank = static_cast<int64_t>(in->size());
  if (!has_perm)
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  std::vector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (size_t i = 0; valid && i < perm.size(); ++i) {
    valid = perm[i] >= 0 && perm[i] < rank && !seen[perm[i]];
    if (valid) seen[perm[i]] = true;
  }
  if (!valid)
    ctx.fail("perm ", ints_to_string(perm), " is not a permutation of the axes of ",
             ctx.input_type(0).to_string());
  DimVector out(rank);
  std::vector<int64_t> axis_map(rank);
  for (int64_t i = 0; i < rank; ++i) {
    out[i] = (*in)[perm[i]];
    axis_map[perm[i]] = i;
  }
  ctx.set_output(0, moved_type(ctx, 0, out, axis_map));
  pass_values(ctx, out);
}

}  // namespace

namespace shape_rules {
void register_shape_reshape_ops(OpRegistry& r) {
  add_rule<infer_reshape>(r, "Reshape");
  add_rule<infer_flatten>(r, "Flatten");
  add_rule<infer_squeeze>(r, "Squeeze");
  add_rule<infer_unsqueeze>(r, "Unsqueeze");
  add_rule<infer_transpose>(r, "Transpose");
}
}  // namespace shape_rules

}  // namespace octet
