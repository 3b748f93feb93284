// Broadcasting elementwise ops: arithmetic, comparisons, logic, the variadic
// Min/Max/Sum/Mean, Where and PRelu. All use ONNX multidirectional broadcasting over
// symbolic dims (PRelu's slope broadcasts one way). Inputs that share ONNX's type variable
// `T` must agree exactly: Add(int32, float16) is an error naming the node (user story 3).
//
// Symbolic values (user story 1) flow through Add/Sub/Mul/Div/Mod, Min/Max, the
// comparisons and Where, so Shape -> Gather -> Mul -> Concat -> Reshape chains fold.
//
// Integer Div: ONNX truncates toward zero, the IR's Dim::floor_div floors. They agree
// when the quotient is exact, or when the dividend is >= 0 and the divisor > 0. Values are
// propagated only in those cases: constants (computed with truncation), exact symbolic
// quotients ((batch*seq*768) / 768 = batch*seq), and dividends that are provably >= 0
// (every symbol is a dimension, so a polynomial with no negative coefficient is >= 0).
// Otherwise the output's type is still inferred but its values are left unknown.
#include <limits>

#include "ops/math_helpers.h"

namespace octet::math {
namespace {

using Dims = std::vector<Dim>;

bool is_pow_base(DType t) { return is_float_type(t) || t == DType::Int32 || t == DType::Int64; }
bool is_equal_type(DType t) { return is_numeric_type(t) || t == DType::Bool || t == DType::String; }

// Symbols in values are tensor dimensions, hence >= 0; a printed form without any minus
// sign is a sum/product/floordiv/mod/max/min of non-negative terms.
bool provably_non_negative(const Dim& d) {
  if (auto c = d.constant()) return *c >= 0;
  return d.to_string().find('-') == std::string::npos;
}

std::optional<Dim> div_value(const Dim& a, const Dim& b) {
  auto ca = a.constant(), cb = b.constant();
  if (cb && *cb == 0) return std::nullopt;  // a runtime error, not a value
  if (ca && cb) {
    if (*ca == std::numeric_limits<int64_t>::min() && *cb == -1) return std::nullopt;
    return Dim(*ca / *cb);  // C++ truncates toward zero, like ONNX integer Div
  }
  if (Dim::mod(a, b) == Dim(0)) return Dim::floor_div(a, b);  // exact
  bool positive_divisor = cb ? *cb > 0 : provably_non_negative(b);
  if (positive_divisor && provably_non_negative(a)) return Dim::floor_div(a, b);
  return std::nullopt;
}

// Integer Mod with fmod=0 takes the divisor's sign: exactly Dim::mod (floor semantics).
std::optional<Dim> mod_value(const Dim& a, const Dim& b) {
  auto cb = b.constant();
  if (cb && *cb == 0) return std::nullopt;
  if (cb && *cb == -1) return Dim(0);  // also keeps INT64_MIN % -1 from overflowing
  return Dim::mod(a, b);
}

// Constants are computed with overflow checks (a wrapped value would be a wrong shape);
// symbolic values are small polynomials over dims.
template <bool (*Checked)(int64_t, int64_t, int64_t*), Dim (*Symbolic)(const Dim&, const Dim&)>
std::optional<Dim> arith_value(const Dim& a, const Dim& b) {
  auto ca = a.constant(), cb = b.constant();
  if (!ca || !cb) return Symbolic(a, b);
  int64_t r;
  if (Checked(*ca, *cb, &r)) return std::nullopt;
  return Dim(r);
}
bool add_overflows(int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }
bool sub_overflows(int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); }
bool mul_overflows(int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }
Dim add_dims(const Dim& a, const Dim& b) { return a + b; }
Dim sub_dims(const Dim& a, const Dim& b) { return a - b; }
Dim mul_dims(const Dim& a, const Dim& b) { return a * b; }
constexpr auto add_value = arith_value<add_overflows, add_dims>;
constexpr auto sub_value = arith_value<sub_overflows, sub_dims>;
constexpr auto mul_value = arith_value<mul_overflows, mul_dims>;

// The sign of a - b when it is known: both constant (compared directly, no overflow), the
// symbolic terms cancel (seq + 1 vs seq), or a - b - 1 is provably >= 0 (a dim against a
// negative constant: torch's `expand(-1, seq)` exports Where(Equal(shape, -1), 1, shape),
// and deciding that Equal keeps Expand's output shape exact instead of a fresh symbol).
std::optional<int64_t> difference_sign(const Dim& a, const Dim& b) {
  auto ca = a.constant(), cb = b.constant();
  if (ca && cb) return *ca < *cb ? -1 : (*ca > *cb ? 1 : 0);
  Dim diff = a - b;
  if (auto d = diff.constant()) return *d < 0 ? -1 : (*d > 0 ? 1 : 0);
  if (provably_non_negative(diff - Dim(1))) return 1;
  if (provably_non_negative(Dim(-1) - diff)) return -1;
  return std::nullopt;
}

// ---------------------------------------------------------------- shared shapes of rules

// Inputs 0 and 1 share a type from `ok`; output 0 has that type (or `out`) and the
// broadcast shape.
void binary(InferContext& ctx, bool (*ok)(DType), const char* allowed,
            std::optional<DType> out = std::nullopt) {
  require_type(ctx, 0, ok, allowed);
  require_same_type(ctx, 0, 1);
  ctx.set_output(0, out.value_or(ctx.input_dtype(0)), broadcast_inputs(ctx, {0, 1}));
}

template <std::optional<Dim> (*Fn)(const Dim&, const Dim&)>
void with_values(InferContext& ctx) {
  propagate_values(ctx, {0, 1}, [](const Dims& v) { return Fn(v[0], v[1]); });
}

void infer_add(InferContext& ctx) { binary(ctx, is_numeric_type, kNumericTypes); with_values<add_value>(ctx); }
void infer_sub(InferContext& ctx) { binary(ctx, is_numeric_type, kNumericTypes); with_values<sub_value>(ctx); }
void infer_mul(InferContext& ctx) { binary(ctx, is_numeric_type, kNumericTypes); with_values<mul_value>(ctx); }
void infer_div(InferContext& ctx) { binary(ctx, is_numeric_type, kNumericTypes); with_values<div_value>(ctx); }

void infer_mod(InferContext& ctx) {
  binary(ctx, is_numeric_type, kNumericTypes);
  bool fmod = attr_flag(ctx, "fmod", false);
  // Integer-style (sign of the divisor) Mod on floats arrived in opset 28.
  if (!fmod && is_float_type(ctx.input_dtype(0)) && onnx_opset(ctx) < 28)
    ctx.fail("fmod=0 with floating ", describe_input(ctx, 0), "; Mod requires fmod=1 for floats before opset 28");
  if (!fmod) with_values<mod_value>(ctx);
}

void infer_pow(InferContext& ctx) {
  // The exponent has its own type variable since opset 12 (Pow(float, int64) is valid).
  if (onnx_opset(ctx) >= 12) {
    require_type(ctx, 0, is_pow_base, "int32, int64 or a float type");
    require_type(ctx, 1, is_numeric_type, kNumericTypes);
  } else {
    require_type(ctx, 0, is_float_type, kFloatTypes);
    require_same_type(ctx, 0, 1);
  }
  ctx.set_output(0, ctx.input_dtype(0), broadcast_inputs(ctx, {0, 1}));
}

void infer_prelu(InferContext& ctx) {
  require_type(ctx, 0, is_numeric_type, kNumericTypes);
  require_same_type(ctx, 0, 1);
  if (const auto& x = ctx.input_dims(0)) require_unidirectional(ctx, 1, *x);
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_dims(0));
}

// ---------------------------------------------------------------- comparisons and logic

template <bool (*Decide)(int64_t diff)>
std::optional<Dim> compare_value(const Dim& a, const Dim& b) {
  auto diff = difference_sign(a, b);
  if (!diff) return std::nullopt;
  return Dim(Decide(*diff) ? 1 : 0);
}

bool eq(int64_t d) { return d == 0; }
bool lt(int64_t d) { return d < 0; }
bool gt(int64_t d) { return d > 0; }
bool le(int64_t d) { return d <= 0; }
bool ge(int64_t d) { return d >= 0; }

template <bool (*Decide)(int64_t)>
void infer_compare(InferContext& ctx) {
  binary(ctx, is_numeric_type, kNumericTypes, DType::Bool);
  with_values<compare_value<Decide>>(ctx);
}

void infer_equal(InferContext& ctx) {
  binary(ctx, is_equal_type, "bool, string, an integer or a float type", DType::Bool);
  with_values<compare_value<eq>>(ctx);
}

template <int64_t (*Op)(int64_t, int64_t)>
std::optional<Dim> logic_value(const Dim& a, const Dim& b) {
  auto ca = a.constant(), cb = b.constant();
  if (!ca || !cb) return std::nullopt;
  return Dim(Op(*ca != 0, *cb != 0));
}
int64_t and_op(int64_t a, int64_t b) { return a & b; }
int64_t or_op(int64_t a, int64_t b) { return a | b; }
int64_t xor_op(int64_t a, int64_t b) { return a ^ b; }

template <int64_t (*Op)(int64_t, int64_t)>
void infer_logic(InferContext& ctx) {
  binary(ctx, is_bool_type, "bool");
  with_values<logic_value<Op>>(ctx);
}

// ---------------------------------------------------------------- variadic and Where

void variadic(InferContext& ctx, bool (*ok)(DType), const char* allowed) {
  if (ctx.num_inputs() == 0) ctx.fail(ctx.node().op_type(), " needs at least one input");
  std::vector<size_t> all;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    require_type(ctx, i, ok, allowed);
    if (i > 0) require_same_type(ctx, 0, i);
    all.push_back(i);
  }
  ctx.set_output(0, ctx.input_dtype(0), broadcast_inputs(ctx, all));
}

template <bool IsMax>
void infer_min_max(InferContext& ctx) {
  variadic(ctx, is_numeric_type, kNumericTypes);
  std::vector<size_t> all;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) all.push_back(i);
  propagate_values(ctx, all, [](const Dims& v) -> std::optional<Dim> {
    Dim acc = v[0];
    for (size_t i = 1; i < v.size(); ++i) acc = IsMax ? Dim::max(acc, v[i]) : Dim::min(acc, v[i]);
    return acc;
  });
}

void infer_sum_mean(InferContext& ctx) { variadic(ctx, is_float_type, kFloatTypes); }

void infer_where(InferContext& ctx) {
  require_dtype(ctx, 0, DType::Bool);
  require_same_type(ctx, 1, 2);
  ctx.set_output(0, ctx.input_dtype(1), broadcast_inputs(ctx, {0, 1, 2}));
  propagate_values(ctx, {0, 1, 2}, [](const Dims& v) -> std::optional<Dim> {
    auto c = v[0].constant();
    if (!c) return std::nullopt;
    return *c != 0 ? v[1] : v[2];
  });
}

}  // namespace

void register_binary_ops(OpRegistry& r) {
  r.add({"", "Add", infer_add});
  r.add({"", "Sub", infer_sub});
  r.add({"", "Mul", infer_mul});
  r.add({"", "Div", infer_div});
  r.add({"", "Mod", infer_mod});
  r.add({"", "Pow", infer_pow});
  r.add({"", "PRelu", infer_prelu});
  r.add({"", "Equal", infer_equal});
  r.add({"", "Less", infer_compare<lt>});
  r.add({"", "Greater", infer_compare<gt>});
  r.add({"", "LessOrEqual", infer_compare<le>});
  r.add({"", "GreaterOrEqual", infer_compare<ge>});
  r.add({"", "And", infer_logic<and_op>});
  r.add({"", "Or", infer_logic<or_op>});
  r.add({"", "Xor", infer_logic<xor_op>});
  r.add({"", "Min", infer_min_max<false>});
  r.add({"", "Max", infer_min_max<true>});
  r.add({"", "Sum", infer_sum_mean});
  r.add({"", "Mean", infer_sum_mean});
  r.add({"", "Where", infer_where});
}

}  // namespace octet::math
