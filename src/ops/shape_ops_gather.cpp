// Indexing and replication: Gather, GatherElements, GatherND, Expand, Tile.
// Gather on a shape vector (Shape(x)[1]) is the most common step of exporter shape
// math, so it propagates contents, negative and scalar indices included.
#include <algorithm>

#include "ops/op_registry.h"
#include "ops/shape_helpers.h"

namespace octet {

using namespace shape_rules;

namespace {

void infer_gather(InferContext& ctx) {
  require_index_dtype(ctx, 1, "indices");
  const auto& data = ctx.input_dims(0);
  const auto& idx = ctx.input_dims(1);
  if (!data || !idx) {
    ctx.set_output(0, moved_type(ctx, 0, std::nullopt));
    return;
  }
  const int64_t rank = static_cast<int64_t>(data->size());
  if (rank == 0) ctx.fail("cannot gather from a scalar");
  const int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", 0), rank);
  const int64_t irank = static_cast<int64_t>(idx->size());
  DimVector out(data->begin(), data->begin() + axis);
  out.insert(out.end(), idx->begin(), idx->end());
  out.insert(out.end(), data->begin() + axis + 1, data->end());
  std::vector<int64_t> axis_map(rank);
  for (int64_t a = 0; a < rank; ++a) axis_map[a] = a < axis ? a : (a == axis ? -1 : a + irank - 1);
  ctx.set_output(0, moved_type(ctx, 0, out, axis_map));

  auto indices = ctx.input_ints(1);
  if (!indices) return;
  const auto extent = (*data)[axis].constant();
  for (int64_t& i : *indices) {
    if (extent && (i < -*extent || i >= *extent))
      ctx.fail("index ", i, " is out of range for axis ", axis, " of ", ctx.input_type(0).to_string());
    if (extent && i < 0) i += *extent;
  }
  auto values = ctx.input_values(0);
  if (!values || rank != 1 || irank > 1 || !extent) return;
  DimVector picked;
  for (int64_t i : *indices) {
    if (i < 0 || i >= static_cast<int64_t>(values->size())) return;
    picked.push_back((*values)[i]);
  }
  ctx.set_output_values(0, std::move(picked));
}

void infer_gather_elements(InferContext& ctx) {
  require_index_dtype(ctx, 1, "indices");
  const auto& data = ctx.input_dims(0);
  const auto& idx = ctx.input_dims(1);
  const int64_t axis_attr = ctx.node().attr_int("axis", 0);
  if (data && idx && data->size() != idx->size())
    ctx.fail("indices ", ctx.input_type(1).to_string(), " must have the rank of data ",
             ctx.input_type(0).to_string());
  if (data) normalize_axis(ctx, axis_attr, static_cast<int64_t>(data->size()));
  TensorType out = moved_type(ctx, 0, idx);
  if (out.quant && out.quant->axis >= 0) out.quant.reset();  // indices pick along any axis
  ctx.set_output(0, out);
}

// GatherND: out = indices.shape[:-1] + data.shape[b + k:] where k = indices.shape[-1] and
// b = batch_dims (an attribute from opset 12). The output rank depends on k, so an
// unknown k gives an unknown rank. k = 0 (each tuple picks a whole batch slice) is
// accepted as onnxruntime does, though the spec asks for k >= 1.
void infer_gather_nd(InferContext& ctx) {
  require_int64(ctx, 1, "indices");
  const Node& node = ctx.node();
  if (node.has_attr("batch_dims") && onnx_opset(ctx) < 12)
    ctx.fail("attribute 'batch_dims' exists from opset 12 (model opset ", onnx_opset(ctx), ")");
  const int64_t b = node.attr_int("batch_dims", 0);
  if (b < 0) ctx.fail("batch_dims ", b, " is negative");
  const auto& data = ctx.input_dims(0);
  const auto& idx = ctx.input_dims(1);
  if (data && data->empty()) ctx.fail("data must have rank >= 1, got ", ctx.input_type(0).to_string());
  if (idx && idx->empty()) ctx.fail("indices must have rank >= 1, got ", ctx.input_type(1).to_string());
  if (data && static_cast<int64_t>(data->size()) <= b)
    ctx.fail("batch_dims ", b, " must be less than the rank of data ", ctx.input_type(0).to_string());
  if (idx && static_cast<int64_t>(idx->size()) <= b)
    ctx.fail("batch_dims ", b, " must be less than the rank of indices ", ctx.input_type(1).to_string());
  const std::optional<int64_t> k = idx ? idx->back().constant() : std::nullopt;
  if (data && k && *k > static_cast<int64_t>(data->size()) - b)
    ctx.fail("indices ", ctx.input_type(1).to_string(), " address ", *k, " dims after ", b,
             " batch dims, but data ", ctx.input_type(0).to_string(), " has only ",
             static_cast<int64_t>(data->size()) - b);
  if (!data || !idx || !k) {
    ctx.set_output(0, moved_type(ctx, 0, std::nullopt));
    return;
  }
  const int64_t rank = static_cast<int64_t>(data->size());
  const int64_t tuple_dims = static_cast<int64_t>(idx->size()) - 1;
  DimVector out(idx->begin(), idx->end() - 1);
  for (int64_t i = 0; i < b; ++i)
    out[i] = unify_dims(ctx, (*data)[i], (*idx)[i], "batch dim " + std::to_string(i) + " of data and indices");
  out.insert(out.end(), data->begin() + b + *k, data->end());
  // Batch axes stay in place, the indexed ones vanish, the trailing ones follow the tuples.
  std::vector<int64_t> axis_map(rank);
  for (int64_t a = 0; a < rank; ++a) axis_map[a] = a < b ? a : (a < b + *k ? -1 : tuple_dims + a - b - *k);
  ctx.set_output(0, moved_type(ctx, 0, out, axis_map));
}

void infer_expand(InferContext& ctx) {
  require_int64(ctx, 1, "the shape input");
  const auto& in = ctx.input_dims(0);
  auto shape = ctx.input_values(1);
  auto len = vector_length(ctx, 1, "the shape input");
  if (!in || (!shape && !len)) {
    ctx.set_output(0, moved_type(ctx, 0, std::nullopt));
    return;
  }
  const int64_t rank = static_cast<int64_t>(in->size());
  DimVector out;
  if (shape) {
    auto b = broadcast_shapes(*in, *shape);
    if (!b) ctx.fail("cannot broadcast ", ctx.input_type(0).to_string(), " to shape ", dims_to_string(*shape));
    out = *b;
  } else {
    // Only the target's length is known: each output dim is the input's where that is
    // a known size other than 1, and otherwise at least the input's.
    const int64_t out_rank = std::max(rank, *len);
    for (int64_t i = 0; i < out_rank; ++i) {
      int64_t j = i - (out_rank - rank);
      Dim d = j >= 0 ? (*in)[j] : Dim(1);
      auto c = d.constant();
      if (c && *c != 1) out.push_back(d);
      else if (c) out.push_back(Dim::fresh("expand"));
      else out.push_back(Dim::max(d, Dim::fresh("expand")));
    }
  }
  const int64_t shift = static_cast<int64_t>(out.size()) - rank;
  std::vector<int64_t> axis_map(rank);
  for (int64_t a = 0; a < rank; ++a) axis_map[a] = a + shift;
  ctx.set_output(0, moved_type(ctx, 0, out, axis_map));

  auto values = ctx.input_values(0);
  if (!values || out.size() > 1) return;
  auto count = dims_product(out).constant();
  if (!count || *count > 64) return;
  if (values->size() == 1) ctx.set_output_values(0, DimVector(*count, (*values)[0]));
  else if (static_cast<int64_t>(values->size()) == *count) ctx.set_output_values(0, *values);
}

void infer_tile(InferContext& ctx) {
  require_int64(ctx, 1, "repeats");
  const auto& in = ctx.input_dims(0);
  auto repeats = ctx.input_values(1);
  auto len = vector_length(ctx, 1, "repeats");
  if (!in) {
    ctx.set_output(0, moved_type(ctx, 0, len ? std::optional(fresh_dims(*len, "tile")) : std::nullopt));
    return;
  }
  const int64_t rank = static_cast<int64_t>(in->size());
  if (len && *len != rank)
    ctx.fail("repeats has ", *len, " entries for input ", ctx.input_type(0).to_string());
  DimVector out(rank);
  for (int64_t i = 0; i < rank; ++i) {
    if (!repeats) {
      out[i] = Dim::fresh("tile");
      continue;
    }
    if (auto c = (*repeats)[i].constant(); c && *c < 0) ctx.fail("negative repeat ", *c, " on axis ", i);
    out[i] = (*in)[i] * (*repeats)[i];
  }
  ctx.set_output(0, moved_type(ctx, 0, out, identity_axis_map(rank)));

  auto values = ctx.input_values(0);
  auto times = repeats && rank == 1 ? (*repeats)[0].constant() : std::nullopt;
  if (!values || !times || *times > 64 || *times * static_cast<int64_t>(values->size()) > 64) return;
  DimVector tiled;
  for (int64_t t = 0; t < *times; ++t) tiled.insert(tiled.end(), values->begin(), values->end());
  ctx.set_output_values(0, std::move(tiled));
}

}  // namespace

namespace shape_rules {
void register_shape_gather_ops(OpRegistry& r) {
  add_rule<infer_gather>(r, "Gather");
  add_rule<infer_gather_elements>(r, "GatherElements");
  add_rule<infer_gather_nd>(r, "GatherND");
  add_rule<infer_expand>(r, "Expand");
  add_rule<infer_tile>(r, "Tile");
}
}  // namespace shape_rules

}  // namespace octet
