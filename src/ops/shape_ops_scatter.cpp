// Scatters: ScatterND, ScatterElements and Scatter (ScatterElements' name before opset 11).
// Each output is data's type: a copy of data with elements replaced (or combined by
// `reduction`) by elements of updates. What inference checks is that the three inputs
// fit together, so a mismatch is reported at load time naming the node, not at run time.
//
// Opset differences: `reduction` exists from opset 16 (none, add, mul) and gained max and
// min in opset 18; Scatter was removed in opset 11.
#include "ops/op_registry.h"
#include "ops/shape_helpers.h"

namespace octet {

using namespace shape_rules;

namespace {

void check_reduction(const InferContext& ctx) {
  const Node& node = ctx.node();
  if (!node.has_attr("reduction")) return;
  const std::string r = node.attr_string("reduction", "none");
  const int64_t since = (r == "none" || r == "add" || r == "mul") ? 16 : (r == "max" || r == "min") ? 18 : 0;
  if (since == 0) ctx.fail("reduction '", r, "' is not one of none, add, mul, max, min");
  if (onnx_opset(ctx) < since)
    ctx.fail("reduction '", r, "' exists from opset ", since, " (model opset ", onnx_opset(ctx), ")");
}

void require_updates_dtype(const InferContext& ctx) {
  if (ctx.input_dtype(2) != ctx.input_dtype(0))
    ctx.fail("updates ", ctx.input_type(2).to_string(), " must have the element type of data ",
             ctx.input_type(0).to_string());
}

// ScatterND: with k = indices.shape[-1], updates must have the shape
// indices.shape[:-1] + data.shape[k:]. Dims that updates know and data does not refine
// the output.
void infer_scatter_nd(InferContext& ctx) {
  require_int64(ctx, 1, "indices");
  require_updates_dtype(ctx);
  check_reduction(ctx);
  const auto& data = ctx.input_dims(0);
  const auto& idx = ctx.input_dims(1);
  const auto& upd = ctx.input_dims(2);
  if (data && data->empty()) ctx.fail("data must have rank >= 1, got ", ctx.input_type(0).to_string());
  if (idx && idx->empty()) ctx.fail("indices must have rank >= 1, got ", ctx.input_type(1).to_string());
  const std::optional<int64_t> k = idx ? idx->back().constant() : std::nullopt;
  if (!data) {
    ctx.set_output(0, moved_type(ctx, 0, std::nullopt));
    return;
  }
  const int64_t rank = static_cast<int64_t>(data->size());
  if (k && *k > rank)
    ctx.fail("indices ", ctx.input_type(1).to_string(), " address ", *k, " dims, but data ",
             ctx.input_type(0).to_string(), " has rank ", rank);
  DimVector out = *data;
  if (idx && k && upd) {
    const int64_t tuple_dims = static_cast<int64_t>(idx->size()) - 1;
    DimVector want(idx->begin(), idx->end() - 1);
    want.insert(want.end(), data->begin() + *k, data->end());
    if (upd->size() != want.size())
      ctx.fail("updates ", ctx.input_type(2).to_string(), " must have the shape indices.shape[:-1] + data.shape[",
               *k, ":] = ", dims_to_string(want));
    for (size_t i = 0; i < want.size(); ++i) {
      Dim d = unify_dims(ctx, (*upd)[i], want[i],
                         "updates " + ctx.input_type(2).to_string() + " vs indices.shape[:-1] + data.shape[" +
                             std::to_string(*k) + ":] = " + dims_to_string(want) + " at dim " + std::to_string(i));
      if (static_cast<int64_t>(i) >= tuple_dims) out[*k + i - tuple_dims] = d;
    }
  }
  ctx.set_output(0, moved_type(ctx, 0, out, identity_axis_map(rank)));
}

// ScatterElements / Scatter: data, indices and updates have one rank; indices and updates
// one shape.
void infer_scatter_elements(InferContext& ctx) {
  if (ctx.node().op_type() == "Scatter" && onnx_opset(ctx) >= 11)
    ctx.fail("Scatter was removed in opset 11 (model opset ", onnx_opset(ctx), "); use ScatterElements");
  require_index_dtype(ctx, 1, "indices");
  require_updates_dtype(ctx);
  check_reduction(ctx);
  const auto& data = ctx.input_dims(0);
  const auto& idx = ctx.input_dims(1);
  const auto& upd = ctx.input_dims(2);
  if (data && data->empty()) ctx.fail("data must have rank >= 1, got ", ctx.input_type(0).to_string());
  for (size_t i : {1, 2}) {
    const auto& dims = ctx.input_dims(i);
    if (data && dims && dims->size() != data->size())
      ctx.fail(i == 1 ? "indices " : "updates ", ctx.input_type(i).to_string(), " must have the rank of data ",
               ctx.input_type(0).to_string());
  }
  if (idx && upd) {
    if (idx->size() != upd->size())
      ctx.fail("indices ", ctx.input_type(1).to_string(), " and updates ", ctx.input_type(2).to_string(),
               " must have one shape");
    for (size_t i = 0; i < idx->size(); ++i)
      unify_dims(ctx, (*idx)[i], (*upd)[i],
                 "indices " + ctx.input_type(1).to_string() + " and updates " + ctx.input_type(2).to_string() +
                     " must have one shape; dim " + std::to_string(i));
  }
  if (!data) {
    ctx.set_output(0, moved_type(ctx, 0, std::nullopt));
    return;
  }
  const int64_t rank = static_cast<int64_t>(data->size());
  normalize_axis(ctx, ctx.node().attr_int("axis", 0), rank);
  ctx.set_output(0, moved_type(ctx, 0, *data, identity_axis_map(rank)));
}

}  // namespace

namespace shape_rules {
void register_shape_scatter_ops(OpRegistry& r) {
  add_rule<infer_scatter_nd>(r, "ScatterND");
  add_rule<infer_scatter_elements>(r, "ScatterElements");
  add_rule<infer_scatter_elements>(r, "Scatter");
}
}  // namespace shape_rules

}  // namespace octet
