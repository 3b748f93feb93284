// Ops that create shape-math values: Shape and Size (whose outputs are the input's dims
// as symbolic values: the root of all symbolic shape math), Constant, ConstantOfShape
// and Range. The other shape-manipulation ops live in shape_ops_*.cpp.
#include <algorithm>
#include <cmath>

#include "ops/op_families.h"
#include "ops/op_registry.h"
#include "ops/shape_helpers.h"

namespace octet {

using namespace shape_rules;

namespace {

// Clamps a Shape start/end attribute against rank the way the spec does.
int64_t clamp_shape_index(int64_t i, int64_t rank) {
  if (i < 0) i += rank;
  return std::clamp<int64_t>(i, 0, rank);
}

void infer_shape(InferContext& ctx) {
  const auto& dims = ctx.input_dims(0);
  const bool ranged = onnx_opset(ctx) >= 15;  // start/end arrived in opset 15
  const int64_t start = ranged ? ctx.node().attr_int("start", 0) : 0;
  const bool has_end = ranged && ctx.node().has_attr("end");
  const int64_t end = has_end ? ctx.node().attr_int("end", 0) : 0;
  if (!dims) {
    // Without the rank, start/end only bound the length (they clamp to the rank).
    ctx.set_output(0, DType::Int64, DimVector{Dim::fresh("rank")});
    return;
  }
  const int64_t rank = static_cast<int64_t>(dims->size());
  const int64_t b = clamp_shape_index(start, rank);
  const int64_t e = has_end ? clamp_shape_index(end, rank) : rank;
  DimVector values;
  for (int64_t i = b; i < e; ++i) values.push_back((*dims)[i]);
  ctx.set_output(0, DType::Int64, DimVector{static_cast<int64_t>(values.size())});
  ctx.set_output_values(0, std::move(values));
}

void infer_size(InferContext& ctx) {
  ctx.set_output(0, DType::Int64, DimVector{});
  if (const auto& dims = ctx.input_dims(0)) ctx.set_output_values(0, {dims_product(*dims)});
}

// Symbolic contents of a small integer constant, when worth tracking.
void set_constant_values(InferContext& ctx, const Tensor& t) {
  if (!is_value_dtype(t.dtype()) || t.rank() > 1) return;
  auto ints = t.to_int64_vector();
  ctx.set_output_values(0, DimVector(ints.begin(), ints.end()));
}

void infer_constant(InferContext& ctx) {
  static const char* const kValueAttrs[] = {"value",        "value_int",    "value_ints",
                                            "value_float",  "value_floats", "value_string",
                                            "value_strings", "sparse_value"};
  const Attribute* attr = nullptr;
  for (const char* name : kValueAttrs) {
    const Attribute* a = ctx.node().find_attr(name);
    if (!a) continue;
    if (attr) ctx.fail("has both '", attr->name, "' and '", a->name, "'; exactly one value attribute is allowed");
    attr = a;
  }
  if (!attr) ctx.fail("has no value attribute");
  const Node& n = ctx.node();
  const std::string& name = attr->name;
  if (name == "value") {
    const Tensor* t = n.attr_tensor("value");
    OCTET_ASSERT(t != nullptr);
    ctx.set_output(0, t->dtype(), DimVector(t->shape().begin(), t->shape().end()));
    set_constant_values(ctx, *t);
  } else if (name == "value_int") {
    ctx.set_output(0, DType::Int64, DimVector{});
    ctx.set_output_values(0, {n.attr_int(name, 0)});
  } else if (name == "value_ints") {
    auto v = n.attr_ints(name);
    ctx.set_output(0, DType::Int64, DimVector{static_cast<int64_t>(v.size())});
    ctx.set_output_values(0, DimVector(v.begin(), v.end()));
  } else if (name == "value_float") {
    n.attr_float(name, 0);  // kind check
    ctx.set_output(0, DType::Float32, DimVector{});
  } else if (name == "value_floats") {
    ctx.set_output(0, DType::Float32, DimVector{static_cast<int64_t>(n.attr_floats(name).size())});
  } else if (name == "value_string") {
    n.attr_string(name, "");
    ctx.set_output(0, DType::String, DimVector{});
  } else if (name == "value_strings") {
    if (attr->kind != Attribute::Kind::Strings) ctx.fail("attribute 'value_strings' must be strings");
    ctx.set_output(0, DType::String, DimVector{static_cast<int64_t>(attr->strings.size())});
  } else {
    // A sparse tensor stays opaque to octet: keep whatever type the model declared.
    ctx.warn("sparse_value constants are not interpreted; keeping the declared type");
  }
}

void infer_constant_of_shape(InferContext& ctx) {
  require_int64(ctx, 0, "the shape input");
  DType dtype = DType::Float32;
  std::optional<int64_t> fill = 0;
  if (const Tensor* value = ctx.node().attr_tensor("value")) {
    if (value->numel() != 1) ctx.fail("'value' must hold one element, got ", value->describe());
    dtype = value->dtype();
    fill = is_value_dtype(dtype) ? std::optional<int64_t>(value->to_int64_vector()[0]) : std::nullopt;
  }
  std::optional<DimVector> dims;
  if (auto shape = ctx.input_values(0)) {
    for (const Dim& d : *shape)
      if (auto c = d.constant(); c && *c < 0) ctx.fail("negative dimension ", *c, " in shape ", dims_to_string(*shape));
    dims = *shape;
  } else if (auto len = vector_length(ctx, 0, "the shape input")) {
    dims = fresh_dims(*len, "const_of_shape");
  }
  ctx.set_output(0, dtype, dims);
  if (!dims || dims->size() > 1 || !fill) return;
  const int64_t count = dims->empty() ? 1 : (*dims)[0].constant().value_or(-1);
  if (count >= 0 && count <= 64) ctx.set_output_values(0, DimVector(count, *fill));
}

// Number of elements of Range(start, limit, delta) for constants: max(ceil((l-s)/d), 0).
int64_t range_count(const InferContext& ctx, __int128 start, __int128 limit, __int128 delta) {
  if (delta == 0) ctx.fail("delta is zero");
  __int128 span = limit - start;
  if ((span > 0) != (delta > 0) || span == 0) return 0;
  __int128 q = span / delta + (span % delta != 0 ? 1 : 0);
  return static_cast<int64_t>(q);
}

void infer_range(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  for (size_t i = 0; i < 3; ++i) {
    static const char* const kNames[] = {"start", "limit", "delta"};
    if (ctx.input_dtype(i) != t)
      ctx.fail("'", kNames[i], "' is ", dtype_name(ctx.input_dtype(i)), " but 'start' is ", dtype_name(t));
    if (const auto& d = ctx.input_dims(i); d && !d->empty())
      ctx.fail("'", kNames[i], "' must be a scalar, got ", ctx.input_type(i).to_string());
  }
  Dim length = Dim::fresh("range");
  std::optional<DimVector> values;
  if (dtype_is_integer(t)) {
    auto s = ctx.input_values(0), l = ctx.input_values(1), d = ctx.input_values(2);
    auto ds = d && d->size() == 1 ? (*d)[0].constant() : std::nullopt;
    if (ds && *ds == 0) ctx.fail("delta is zero");
    if (s && l && ds && s->size() == 1 && l->size() == 1) {
      const Dim& start = (*s)[0];
      const Dim& limit = (*l)[0];
      auto cs = start.constant(), cl = limit.constant();
      if (cs && cl) {
        int64_t n = range_count(ctx, *cs, *cl, *ds);
        length = n;
        if (n <= 64) {
          values.emplace();
          for (int64_t i = 0; i < n; ++i) values->push_back(*cs + i * *ds);
        }
      } else {
        // Symbolic bounds come from shapes (arange(seq)): the span is taken as
        // non-negative in the stepping direction.
        length = *ds > 0 ? ceil_div(limit - start, *ds) : ceil_div(start - limit, -*ds);
      }
    }
  } else if (dtype_is_float(t)) {
    const Tensor *s = ctx.input_constant(0), *l = ctx.input_constant(1), *d = ctx.input_constant(2);
    if (s && l && d && s->numel() == 1 && l->numel() == 1 && d->numel() == 1) {
      double start = s->to_float_vector()[0], limit = l->to_float_vector()[0], delta = d->to_float_vector()[0];
      if (delta == 0) ctx.fail("delta is zero");
      const double n = std::ceil((limit - start) / delta);
      if (!std::isfinite(n) || n > 1e15) ctx.fail("Range(", start, ", ", limit, ", ", delta, ") has no finite length");
      length = std::max<int64_t>(static_cast<int64_t>(n), 0);
    }
  } else {
    ctx.fail("unsupported element type ", dtype_name(t));
  }
  ctx.set_output(0, t, DimVector{length});
  if (values) ctx.set_output_values(0, std::move(*values));
}

}  // namespace

namespace shape_rules {
void register_shape_basic_ops(OpRegistry& r) {
  add_rule<infer_shape>(r, "Shape");
  add_rule<infer_size>(r, "Size");
  add_rule<infer_constant>(r, "Constant");
  add_rule<infer_constant_of_shape>(r, "ConstantOfShape");
  add_rule<infer_range>(r, "Range");
}
}  // namespace shape_rules

void register_shape_ops(OpRegistry& r) {
  register_shape_basic_ops(r);
  register_shape_reshape_ops(r);
  register_shape_slice_ops(r);
  register_shape_gather_ops(r);
  register_shape_scatter_ops(r);
}

}  // namespace octet
