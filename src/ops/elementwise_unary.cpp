// One-input elementwise ops: activations and math functions, Identity/Dropout, Cast,
// CastLike and Clip. Output shape is the input's; the element type follows the op's
// ONNX type constraint. Identity, Neg, Abs, Cast, CastLike and Clip carry the symbolic
// contents of shape tensors.
#include <limits>

#include "ops/math_helpers.h"

namespace octet::math {
namespace {

void same_as_input(InferContext& ctx) {
  const TensorType& t = ctx.input_type(0);
  ctx.set_output(0, t.dtype, t.dims);
}

void float_unary(InferContext& ctx) {
  require_type(ctx, 0, is_float_type, kFloatTypes);
  same_as_input(ctx);
}

void numeric_unary(InferContext& ctx) {
  require_type(ctx, 0, is_numeric_type, kNumericTypes);
  same_as_input(ctx);
}

bool is_signed_numeric(DType t) { return is_float_type(t) || is_signed_int_type(t); }

void float_to_bool(InferContext& ctx) {  // IsNaN, IsInf
  require_type(ctx, 0, is_float_type, kFloatTypes);
  ctx.set_output(0, DType::Bool, ctx.input_dims(0));
}

void infer_identity(InferContext& ctx) {
  same_as_input(ctx);
  propagate_values(ctx, {0}, [](const std::vector<Dim>& v) -> std::optional<Dim> { return v[0]; });
}

void infer_neg(InferContext& ctx) {
  require_type(ctx, 0, is_signed_numeric, kSignedTypes);
  same_as_input(ctx);
  propagate_values(ctx, {0}, [](const std::vector<Dim>& v) -> std::optional<Dim> {
    if (v[0] == Dim(std::numeric_limits<int64_t>::min())) return std::nullopt;  // wraps
    return -v[0];
  });
}

void infer_abs(InferContext& ctx) {
  numeric_unary(ctx);
  propagate_values(ctx, {0}, [](const std::vector<Dim>& v) -> std::optional<Dim> {
    auto c = v[0].constant();
    if (!c || *c == std::numeric_limits<int64_t>::min()) return std::nullopt;  // |seq - 1|: no polynomial
    return Dim(*c < 0 ? -*c : *c);
  });
}

void infer_relu(InferContext& ctx) {
  // Signed integers since opset 14.
  if (onnx_opset(ctx) >= 14)
    require_type(ctx, 0, is_signed_numeric, kSignedTypes);
  else
    require_type(ctx, 0, is_float_type, kFloatTypes);
  same_as_input(ctx);
}

void infer_gelu(InferContext& ctx) {
  std::string approx = ctx.node().attr_string("approximate", "none");
  if (approx != "none" && approx != "tanh")
    ctx.fail("attribute approximate is '", approx, "'; Gelu accepts 'none' or 'tanh'");
  float_unary(ctx);
}

void infer_not(InferContext& ctx) {
  require_dtype(ctx, 0, DType::Bool);
  same_as_input(ctx);
  propagate_values(ctx, {0}, [](const std::vector<Dim>& v) -> std::optional<Dim> {
    auto c = v[0].constant();
    if (!c) return std::nullopt;
    return Dim(*c == 0 ? 1 : 0);
  });
}

void infer_dropout(InferContext& ctx) {
  // Inference semantics: output 0 is the input; the optional mask is bool (opset 10+;
  // before, it had the input's type).
  float_unary(ctx);
  if (ctx.has_input(1)) require_type(ctx, 1, is_float_type, kFloatTypes);  // ratio
  if (ctx.has_input(2)) require_dtype(ctx, 2, DType::Bool);                 // training_mode
  DType mask = onnx_opset(ctx) >= 10 ? DType::Bool : ctx.input_dtype(0);
  ctx.set_output(1, mask, ctx.input_dims(0));
}

// The value an integer lands on after a C-style conversion to `to` (ONNX Cast between
// integer types wraps modulo 2^bits).
int64_t wrap_to(int64_t v, DType to) {
  switch (to) {
    case DType::Bool: return v != 0;
    case DType::Int8: return static_cast<int8_t>(v);
    case DType::UInt8: return static_cast<uint8_t>(v);
    case DType::Int16: return static_cast<int16_t>(v);
    case DType::UInt16: return static_cast<uint16_t>(v);
    case DType::Int32: return static_cast<int32_t>(v);
    case DType::UInt32: return static_cast<uint32_t>(v);
    default: return v;  // int64, uint64: same bits
  }
}

// Casts the input's known values to `to`: constants exactly; symbolic dims only into the
// 32/64-bit integer types, which hold any real dimension.
void propagate_cast_values(InferContext& ctx, DType from, DType to) {
  if (!is_int_type(from) && from != DType::Bool) return;
  propagate_values(ctx, {0}, [to](const std::vector<Dim>& v) -> std::optional<Dim> {
    if (auto c = v[0].constant()) return Dim(wrap_to(*c, to));
    if (to == DType::Int64 || to == DType::Int32 || to == DType::UInt64 || to == DType::UInt32)
      return v[0];
    return std::nullopt;
  });
}

// `round_mode` (opset 24) picks how values round to float8e8m0.
void check_round_mode(const InferContext& ctx) {
  const std::string mode = ctx.node().attr_string("round_mode", "up");
  if (mode != "up" && mode != "down" && mode != "nearest")
    ctx.fail("round_mode is '", mode, "'; expected 'up', 'down' or 'nearest'");
}

void infer_cast(InferContext& ctx) {
  const Attribute* to_attr = ctx.node().find_attr("to");
  if (!to_attr) ctx.fail("attribute 'to' is required");
  int64_t code = ctx.node().attr_int("to", 0);
  auto to = dtype_from_onnx(static_cast<int32_t>(code));
  if (!to || *to == DType::Undefined) ctx.fail("attribute to=", code, " is not a known element type");
  // `saturate` (opset 19) changes only how out-of-range float8 values convert.
  check_round_mode(ctx);
  ctx.set_output(0, *to, ctx.input_dims(0));
  propagate_cast_values(ctx, ctx.input_dtype(0), *to);
}

void infer_cast_like(InferContext& ctx) {
  check_round_mode(ctx);
  DType to = ctx.input_dtype(1);
  ctx.set_output(0, to, ctx.input_dims(0));
  propagate_cast_values(ctx, ctx.input_dtype(0), to);
}

void infer_clip(InferContext& ctx) {
  int64_t opset = onnx_opset(ctx);
  // Integer inputs since opset 12; min/max are inputs (not attributes) since opset 11.
  if (opset >= 12)
    require_type(ctx, 0, is_numeric_type, kNumericTypes);
  else
    require_type(ctx, 0, is_float_type, kFloatTypes);
  if (opset >= 11) {
    for (size_t i = 1; i <= 2; ++i) {
      if (!ctx.has_input(i)) continue;
      require_same_type(ctx, 0, i);
      if (const auto& d = ctx.input_dims(i)) {
        auto n = dims_product(*d).constant();
        if (n && *n != 1) ctx.fail(describe_input(ctx, i), " must be a scalar (the clip bound)");
      }
    }
  }
  same_as_input(ctx);
  if (opset < 11) return;
  std::optional<Dim> lo, hi;
  for (size_t i = 1; i <= 2; ++i) {
    if (!ctx.has_input(i)) continue;
    auto v = ctx.input_values(i);
    if (!v || v->size() != 1) return;
    (i == 1 ? lo : hi) = (*v)[0];
  }
  propagate_values(ctx, {0}, [lo, hi](const std::vector<Dim>& v) -> std::optional<Dim> {
    Dim x = v[0];
    if (lo) x = Dim::max(x, *lo);
    if (hi) x = Dim::min(x, *hi);
    return x;
  });
}

}  // namespace

void register_unary_ops(OpRegistry& r) {
  for (const char* op : {"Sqrt", "Reciprocal", "Exp", "Log", "Tanh", "Sigmoid", "Floor", "Ceil",
                         "Round", "Sin", "Cos", "Softplus", "Softsign", "LeakyRelu", "HardSigmoid",
                         "HardSwish", "Elu", "Selu", "Mish"})
    r.add({"", op, float_unary});
  for (const char* op : {"Erf", "Sign"}) r.add({"", op, numeric_unary});
  r.add({"", "IsNaN", float_to_bool});
  r.add({"", "IsInf", float_to_bool});
  r.add({"", "Abs", infer_abs});
  r.add({"", "Neg", infer_neg});
  r.add({"", "Relu", infer_relu});
  r.add({"", "Gelu", infer_gelu});
  r.add({"", "Not", infer_not});
  r.add({"", "Identity", infer_identity});
  r.add({"", "Dropout", infer_dropout});
  r.add({"", "Cast", infer_cast});
  r.add({"", "CastLike", infer_cast_like});
  r.add({"", "Clip", infer_clip});
}

}  // namespace octet::math
