#include "ops/math_helpers.h"

#include <algorithm>
#include <set>

namespace octet::math {

bool is_float_type(DType t) {
  return t == DType::Float16 || t == DType::Float32 || t == DType::Float64 || t == DType::BFloat16;
}

bool is_int_type(DType t) { return dtype_is_integer(t) && dtype_bits(t) >= 8; }

bool is_signed_int_type(DType t) { return is_int_type(t) && dtype_is_signed(t); }

bool is_numeric_type(DType t) { return is_float_type(t) || is_int_type(t); }

bool is_bool_type(DType t) { return t == DType::Bool; }

bool is_any_type(DType t) { return t != DType::Undefined; }

std::string describe_input(const InferContext& ctx, size_t i) {
  const Value* v = ctx.node().input(i);
  if (!v) return "input " + std::to_string(i) + " (absent)";
  return "input " + std::to_string(i) + " '" + v->name() + "' (" + v->type.to_string() + ")";
}

void require_type(const InferContext& ctx, size_t i, bool (*ok)(DType), const char* allowed) {
  DType t = ctx.input_dtype(i);
  if (!ok(t)) ctx.fail(describe_input(ctx, i), " has element type ", dtype_name(t), "; ",
                       ctx.node().op_type(), " requires ", allowed);
}

void require_dtype(const InferContext& ctx, size_t i, DType want) {
  DType t = ctx.input_dtype(i);
  if (t != want) ctx.fail(describe_input(ctx, i), " has element type ", dtype_name(t), "; ",
                          ctx.node().op_type(), " requires ", dtype_name(want));
}

void require_same_type(const InferContext& ctx, size_t a, size_t b) {
  if (ctx.input_dtype(a) != ctx.input_dtype(b))
    ctx.fail("mixed element types: ", describe_input(ctx, a), " and ", describe_input(ctx, b),
             "; ", ctx.node().op_type(), " requires both inputs to have the same type (insert a Cast)");
}

std::optional<DimVector> broadcast_inputs(const InferContext& ctx, const std::vector<size_t>& inputs) {
  for (size_t i : inputs)
    if (!ctx.input_dims(i)) return std::nullopt;
  DimVector out;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const DimVector& d = *ctx.input_dims(inputs[k]);
    if (k == 0) {
      out = d;
      continue;
    }
    auto b = broadcast_shapes(out, d);
    if (!b) {
      std::string so = dims_to_string(out);
      ctx.fail("cannot broadcast shapes: ", describe_input(ctx, inputs[k]), " does not broadcast with ",
               k == 1 ? describe_input(ctx, inputs[0]) : "the other inputs' shape " + so);
    }
    out = std::move(*b);
  }
  return out;
}

void require_unidirectional(const InferContext& ctx, size_t i, const DimVector& target) {
  const auto& dims = ctx.input_dims(i);
  if (!dims) return;
  auto bad = [&] {
    ctx.fail(describe_input(ctx, i), " does not broadcast to ", dims_to_string(target));
  };
  if (dims->size() > target.size()) bad();
  size_t off = target.size() - dims->size();
  for (size_t k = 0; k < dims->size(); ++k) {
    auto s = (*dims)[k].constant(), t = target[off + k].constant();
    if (s && t && *s != 1 && *s != *t) bad();
  }
}

bool attr_flag(const InferContext& ctx, const std::string& name, bool fallback) {
  return ctx.node().attr_int(name, fallback ? 1 : 0) != 0;
}

std::optional<DimVector> map_values(const std::vector<DimVector>& args, const ValueFn& fn) {
  // numpy broadcasting for rank <= 1: every length is 1 or the common length n.
  std::optional<size_t> n;
  for (const auto& a : args) {
    if (a.size() == 1) continue;
    if (n && *n != a.size()) return std::nullopt;
    n = a.size();
  }
  size_t count = n.value_or(1);
  DimVector out;
  out.reserve(count);
  std::vector<Dim> elems(args.size());
  for (size_t i = 0; i < count; ++i) {
    for (size_t k = 0; k < args.size(); ++k) elems[k] = args[k].size() == 1 ? args[k][0] : args[k][i];
    auto r = fn(elems);
    if (!r) return std::nullopt;
    out.push_back(std::move(*r));
  }
  return out;
}

void propagate_values(InferContext& ctx, const std::vector<size_t>& inputs, const ValueFn& fn) {
  const Value* out = ctx.node().output(0);
  if (!out) return;
  DType t = out->type.dtype;
  if (!is_int_type(t) && t != DType::Bool) return;
  if (!out->type.dims || out->type.dims->size() > 1) return;
  std::vector<DimVector> args;
  for (size_t i : inputs) {
    auto v = ctx.input_values(i);
    if (!v) return;
    args.push_back(std::move(*v));
  }
  auto values = map_values(args, fn);
  if (!values) return;
  // The values must fill the output's shape exactly.
  const DimVector& dims = *out->type.dims;
  if (dims.empty() && values->size() != 1) return;
  if (dims.size() == 1) {
    auto c = dims[0].constant();
    if (!c || *c != static_cast<int64_t>(values->size())) return;
  }
  ctx.set_output_values(0, std::move(*values));
}

}  // namespace octet::math
