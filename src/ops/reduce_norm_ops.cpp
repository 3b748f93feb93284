// Reductions, softmax-like ops and normalizations: Softmax/LogSoftmax/Hardmax,
// Reduce{Mean,Sum,Max,Min,Prod,L1,L2,SumSquare,LogSum,LogSumExp}, ArgMax/ArgMin, TopK,
// LayerNormalization, RMSNormalization, CumSum, Trilu.
//
// Opset differences handled here:
// - Softmax family: axis defaults to 1 before opset 13, -1 from 13.
// - Reductions: `axes` is an attribute up to opset 12 (ReduceSum) / 17 (the others) and
//   an optional int64 input afterwards, together with noop_with_empty_axes.
// - ReduceMax/ReduceMin accept bool from opset 20.
// - TopK: k is an attribute before opset 10 and a 1-element int64 input from 10 on;
//   `largest` and `sorted` exist from opset 11.
#include "ops/math_helpers.h"
#include "ops/op_families.h"

namespace octet {
namespace math {
namespace {

void same_as_input(InferContext& ctx) {
  const TensorType& t = ctx.input_type(0);
  ctx.set_output(0, t.dtype, t.dims);
}

// ---------------------------------------------------------------- Softmax family

void infer_softmax(InferContext& ctx) {
  require_type(ctx, 0, is_float_type, kFloatTypes);
  int64_t axis = ctx.node().attr_int("axis", onnx_opset(ctx) >= 13 ? -1 : 1);
  if (const auto& dims = ctx.input_dims(0)) normalize_axis(ctx, axis, static_cast<int64_t>(dims->size()));
  same_as_input(ctx);
}

// ---------------------------------------------------------------- Reduce*

// The dims a reduction leaves when the axes are only known at run time: with keepdims the
// rank stays and each dim is either kept or 1 (a dim that is 1 already stays 1).
DimVector unknown_axes_kept(const DimVector& in) {
  DimVector out;
  for (const Dim& d : in) out.push_back(d == Dim(1) ? Dim(1) : Dim::fresh("reduced"));
  return out;
}

void infer_reduce(InferContext& ctx, int64_t axes_input_since, bool allow_bool_from_20) {
  int64_t opset = onnx_opset(ctx);
  if (allow_bool_from_20 && opset >= 20 && ctx.input_dtype(0) == DType::Bool) {
    // bool max/min is any/all
  } else {
    require_type(ctx, 0, is_numeric_type, kNumericTypes);
  }
  const bool keepdims = attr_flag(ctx, "keepdims", true);
  const bool axes_from_input = opset >= axes_input_since;
  const bool noop_empty = axes_from_input && attr_flag(ctx, "noop_with_empty_axes", false);

  std::optional<std::vector<int64_t>> axes;  // nullopt: known only at run time
  std::optional<int64_t> axes_count;         // how many, when only that is known
  if (axes_from_input) {
    if (ctx.node().has_attr("axes"))
      ctx.fail("axes is an input from opset ", axes_input_since, ", not an attribute (opset ", opset, ")");
    if (!ctx.has_input(1)) {
      axes = std::vector<int64_t>{};
    } else {
      require_dtype(ctx, 1, DType::Int64);
      axes = ctx.input_ints(1);
      const auto& ad = ctx.input_dims(1);
      if (!axes && ad && ad->size() == 1) axes_count = (*ad)[0].constant();
      if (axes_count && *axes_count == 0) axes = std::vector<int64_t>{};
    }
  } else {
    axes = ctx.node().attr_ints("axes");
  }

  const DType t = ctx.input_dtype(0);
  const auto& in = ctx.input_dims(0);
  if (!in) return ctx.set_output(0, t, std::nullopt);
  const int64_t rank = static_cast<int64_t>(in->size());

  if (!axes) {
    if (keepdims) return ctx.set_output(0, t, unknown_axes_kept(*in));
    if (axes_count && *axes_count <= rank) {
      DimVector out;
      for (int64_t i = 0; i < rank - *axes_count; ++i) out.push_back(Dim::fresh("reduced"));
      return ctx.set_output(0, t, out);
    }
    return ctx.set_output(0, t, std::nullopt);
  }

  std::vector<bool> reduced(rank, false);
  if (axes->empty()) {
    if (noop_empty) return ctx.set_output(0, t, *in);
    reduced.assign(rank, true);
  } else {
    for (int64_t a : normalize_axes(ctx, *axes, rank)) reduced[a] = true;
  }
  DimVector out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      out.push_back((*in)[i]);
    else if (keepdims)
      out.push_back(1);
  }
  ctx.set_output(0, t, out);
}

template <int64_t AxesInputSince, bool AllowBool>
void reduce_rule(InferContext& ctx) {
  infer_reduce(ctx, AxesInputSince, AllowBool);
}

void infer_arg_reduce(InferContext& ctx) {  // ArgMax, ArgMin
  require_type(ctx, 0, is_numeric_type, kNumericTypes);
  int64_t axis = ctx.node().attr_int("axis", 0);
  bool keepdims = attr_flag(ctx, "keepdims", true);
  const auto& in = ctx.input_dims(0);
  if (!in) return ctx.set_output(0, DType::Int64, std::nullopt);
  int64_t a = normalize_axis(ctx, axis, static_cast<int64_t>(in->size()));
  DimVector out = *in;
  if (keepdims)
    out[a] = 1;
  else
    out.erase(out.begin() + a);
  ctx.set_output(0, DType::Int64, out);
}

// TopK: Values (X's type) and Indices (int64) both have X's dims with dim `axis` = k. A k
// known only symbolically (min(seq, 5)) becomes that dim; an unknown one a fresh symbol.
void infer_topk(InferContext& ctx) {
  require_type(ctx, 0, is_numeric_type, kNumericTypes);
  const Node& node = ctx.node();
  const int64_t opset = onnx_opset(ctx);
  std::optional<Dim> k;
  if (opset < 10) {
    if (ctx.has_input(1)) ctx.fail("k is an attribute before opset 10, not an input (model opset ", opset, ")");
    if (!node.has_attr("k")) ctx.fail("attribute 'k' is required before opset 10");
    k = Dim(node.attr_int("k", 0));
  } else {
    if (node.has_attr("k")) ctx.fail("k is an input from opset 10, not an attribute (model opset ", opset, ")");
    if (!ctx.has_input(1)) ctx.fail("input 1 'K' is required");
    require_dtype(ctx, 1, DType::Int64);
    const auto& kdims = ctx.input_dims(1);
    if (kdims && (kdims->size() != 1 || ((*kdims)[0].constant() && *(*kdims)[0].constant() != 1)))
      ctx.fail("K must be a 1-D tensor of one element, got ", describe_input(ctx, 1));
    if (auto values = ctx.input_values(1); values && values->size() == 1) k = (*values)[0];
  }
  for (const char* attr : {"largest", "sorted"}) {
    if (node.has_attr(attr) && opset < 11)
      ctx.fail("attribute '", attr, "' exists from opset 11 (model opset ", opset, ")");
    const int64_t v = node.attr_int(attr, 1);
    if (v != 0 && v != 1) ctx.fail("attribute '", attr, "' must be 0 or 1, got ", v);
  }
  const std::optional<int64_t> k_value = k ? k->constant() : std::nullopt;
  if (k_value && *k_value < 0) ctx.fail("k = ", *k_value, " is negative");
  const auto& in = ctx.input_dims(0);
  if (!in) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    ctx.set_output(1, DType::Int64, std::nullopt);
    return;
  }
  const int64_t rank = static_cast<int64_t>(in->size());
  if (rank == 0) ctx.fail("X must have rank >= 1, got ", describe_input(ctx, 0));
  const int64_t axis = normalize_axis(ctx, node.attr_int("axis", -1), rank);
  const auto extent = (*in)[axis].constant();
  if (k_value && extent && *k_value > *extent)
    ctx.fail("k = ", *k_value, " exceeds dim ", axis, " of ", describe_input(ctx, 0));
  DimVector out = *in;
  out[axis] = k ? *k : Dim::fresh("topk");
  ctx.set_output(0, ctx.input_dtype(0), out);
  ctx.set_output(1, DType::Int64, out);
}

// ---------------------------------------------------------------- normalizations

// LayerNormalization and RMSNormalization accept axis in [-r, r] (axis = r normalizes
// over nothing); returns the normalized first axis.
int64_t norm_axis(const InferContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis > rank)
    ctx.fail("axis ", axis, " is out of range [", -rank, ", ", rank, "] for ", describe_input(ctx, 0));
  return axis < 0 ? axis + rank : axis;
}

DType stash_dtype(const InferContext& ctx) {
  int64_t code = ctx.node().attr_int("stash_type", 1);
  auto u = dtype_from_onnx(static_cast<int32_t>(code));
  if (!u || !is_float_type(*u))
    ctx.fail("stash_type=", code, " is not a float type (", kFloatTypes, ")");
  return *u;
}

void infer_layer_norm(InferContext& ctx) {
  // X, Scale and B share T; Mean and InvStdDev have the stash type. ONNX names U as
  // float/bfloat16 only, but ONNX Runtime's fusions write stash_type=double for double
  // models, so any float type is accepted.
  require_type(ctx, 0, is_float_type, kFloatTypes);
  require_same_type(ctx, 0, 1);
  if (ctx.has_input(2)) require_same_type(ctx, 0, 2);
  const DType u = stash_dtype(ctx);
  const auto& in = ctx.input_dims(0);
  ctx.set_output(0, ctx.input_dtype(0), in);
  if (!in) {
    ctx.set_output(1, u, std::nullopt);
    ctx.set_output(2, u, std::nullopt);
    return;
  }
  const int64_t rank = static_cast<int64_t>(in->size());
  const int64_t axis = norm_axis(ctx, ctx.node().attr_int("axis", -1), rank);
  // The function body flattens Scale and B to [1, numel] against X as [outer, inner]:
  // their element count must be the normalized size (or 1).
  const DimVector inner_dims(in->begin() + axis, in->end());
  auto inner = dims_product(inner_dims).constant();
  for (size_t i = 1; i <= 2; ++i) {
    if (!ctx.has_input(i) || !ctx.input_dims(i) || !inner) continue;
    auto n = dims_product(*ctx.input_dims(i)).constant();
    if (n && *n != *inner && *n != 1)
      ctx.fail(describe_input(ctx, i), " has ", *n, " elements; the normalized shape ",
               dims_to_string(inner_dims), " has ", *inner);
  }
  DimVector stats = *in;
  for (int64_t i = axis; i < rank; ++i) stats[i] = 1;
  ctx.set_output(1, u, stats);
  ctx.set_output(2, u, stats);
}

void infer_rms_norm(InferContext& ctx) {
  // opset 23: X is T, scale and Y are V (both float types, possibly different).
  require_type(ctx, 0, is_float_type, kFloatTypes);
  require_type(ctx, 1, is_float_type, kFloatTypes);
  stash_dtype(ctx);
  const auto& in = ctx.input_dims(0);
  if (in) {
    const int64_t rank = static_cast<int64_t>(in->size());
    const int64_t axis = norm_axis(ctx, ctx.node().attr_int("axis", -1), rank);
    require_unidirectional(ctx, 1, DimVector(in->begin() + axis, in->end()));
  }
  ctx.set_output(0, ctx.input_dtype(1), in);
}

// ---------------------------------------------------------------- CumSum, Trilu

bool is_cumsum_type(DType t) {
  return is_float_type(t) || t == DType::Int32 || t == DType::Int64 || t == DType::UInt32 ||
         t == DType::UInt64;
}
bool is_index_type(DType t) { return t == DType::Int32 || t == DType::Int64; }

// A scalar (or one-element) integer input such as CumSum's axis or Trilu's k.
void require_scalar_index(const InferContext& ctx, size_t i) {
  require_type(ctx, i, is_index_type, "int32 or int64");
  if (const auto& d = ctx.input_dims(i)) {
    auto n = dims_product(*d).constant();
    if (d->size() > 1 || (n && *n != 1)) ctx.fail(describe_input(ctx, i), " must be a scalar");
  }
}

void infer_cumsum(InferContext& ctx) {
  require_type(ctx, 0, is_cumsum_type, "int32, int64, uint32, uint64 or a float type");
  require_scalar_index(ctx, 1);
  auto axis = ctx.input_ints(1);
  if (const auto& in = ctx.input_dims(0); in && axis && axis->size() == 1)
    normalize_axis(ctx, (*axis)[0], static_cast<int64_t>(in->size()));
  same_as_input(ctx);
}

void infer_trilu(InferContext& ctx) {
  if (const auto& in = ctx.input_dims(0); in && in->size() < 2)
    ctx.fail(describe_input(ctx, 0), " has rank ", in->size(), "; Trilu needs rank >= 2");
  if (ctx.has_input(1)) {
    require_dtype(ctx, 1, DType::Int64);
    require_scalar_index(ctx, 1);
  }
  same_as_input(ctx);
}

}  // namespace
}  // namespace math

void register_reduce_norm_ops(OpRegistry& r) {
  using namespace math;
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) r.add({"", op, infer_softmax});
  r.add({"", "ReduceSum", reduce_rule<13, false>});
  for (const char* op : {"ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                         "ReduceLogSum", "ReduceLogSumExp"})
    r.add({"", op, reduce_rule<18, false>});
  r.add({"", "ReduceMax", reduce_rule<18, true>});
  r.add({"", "ReduceMin", reduce_rule<18, true>});
  r.add({"", "ArgMax", infer_arg_reduce});
  r.add({"", "ArgMin", infer_arg_reduce});
  r.add({"", "TopK", infer_topk});
  r.add({"", "LayerNormalization", infer_layer_norm});
  r.add({"", "RMSNormalization", infer_rms_norm});
  r.add({"", "CumSum", infer_cumsum});
  r.add({"", "Trilu", infer_trilu});
}

}  // namespace octet
