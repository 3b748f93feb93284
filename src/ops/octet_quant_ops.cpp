// The int8 fused ops of the `octet` domain (docs/quantization.md §2).
//
//   octet.QMatMul(A, a_scale?, a_zero_point?, B, b_scale, b_zero_point?, bias?, residual?,
//                 a_channel_scale?, output_scale?)
//       attrs: activation = "" | "gelu" | "gelu_tanh", dynamic_type = "uint8" | "int8"
//   Y = (per row m, column n) sa[m] * sb[n] * sum_k (qa[m,k] - za[m]) * (B[k,n] - zb[n])
//       + bias[n], then the activation, then * output_scale[n] (one value or one per column:
//       a LayerScale Mul folded in, fold_matmul_output_scale.cpp), then + residual. qa is A quantized with the given
//       a_scale/a_zero_point (static), or per row of A when a_scale is absent (dynamic).
//
// The rule checks what the kernels rely on: element types, B 2-D, b_scale/b_zero_point
// one per tensor or one per column, a_zero_point only next to a_scale (a dynamic node
// has neither), dynamic_type only without a_scale, bias [N] and a residual of exactly
// Y's shape (fusions write only that; the kernels add it elementwise).
#include "ops/math_helpers.h"
#include "ops/matmul_shape.h"
#include "ops/op_families.h"

namespace octet {
namespace {

using math::describe_input;
using math::require_dtype;

bool is_8bit(DType t) { return t == DType::Int8 || t == DType::UInt8; }

bool known_differ(const Dim& a, const Dim& b) {
  auto ca = a.constant(), cb = b.constant();
  return ca && cb && *ca != *cb;
}

// A scalar or a one-element 1-D tensor. Unknown ranks pass (checked at run time).
bool one_element(const std::optional<DimVector>& d) {
  if (!d) return true;
  if (d->empty()) return true;
  return d->size() == 1 && !known_differ((*d)[0], Dim(1));
}

// b_scale (and b_zero_point) is per tensor (scalar, [1]) or per column ([N]).
void check_per_column(const InferContext& ctx, size_t i, const std::optional<Dim>& n) {
  const auto& d = ctx.input_dims(i);
  if (!d || one_element(d)) return;
  if (d->size() != 1)
    ctx.fail(describe_input(ctx, i), " must be a scalar, [1] or [N] (one value per column of B)");
  if (n && known_differ((*d)[0], *n))
    ctx.fail(describe_input(ctx, i), " has ", (*d)[0].to_string(), " values; B has N = ", n->to_string(),
             " columns (per-column parameters need N, per tensor 1)");
}

void infer_qmatmul(InferContext& ctx) {
  const Node& node = ctx.node();
  if (ctx.num_inputs() > 10)
    ctx.fail("takes at most 10 inputs (A, a_scale, a_zero_point, B, b_scale, b_zero_point, bias, residual, "
             "a_channel_scale, output_scale), got ", ctx.num_inputs());
  if (!ctx.has_input(3) || !ctx.has_input(4)) ctx.fail("B (input 3) and b_scale (input 4) are required");
  const std::string act = node.attr_string("activation", "");
  if (act != "" && act != "gelu" && act != "gelu_tanh")
    ctx.fail("activation must be \"\", \"gelu\" or \"gelu_tanh\", got \"", act, "\"");
  const bool is_static = ctx.has_input(1);
  if (node.has_attr("dynamic_type")) {
    const std::string dyn = node.attr_string("dynamic_type", "uint8");
    if (dyn != "uint8" && dyn != "int8") ctx.fail("dynamic_type must be \"uint8\" or \"int8\", got \"", dyn, "\"");
    if (is_static) ctx.fail("dynamic_type applies only without a_scale (dynamic quantization); input 1 is given");
  }

  require_dtype(ctx, 0, DType::Float32);
  if (is_static) {
    require_dtype(ctx, 1, DType::Float32);
    if (!one_element(ctx.input_dims(1))) ctx.fail(describe_input(ctx, 1), " (a_scale) must be a scalar");
    if (ctx.has_input(2)) {
      math::require_type(ctx, 2, is_8bit, "uint8 or int8");
      if (!one_element(ctx.input_dims(2))) ctx.fail(describe_input(ctx, 2), " (a_zero_point) must be a scalar");
    }
  } else if (ctx.has_input(2)) {
    ctx.fail(describe_input(ctx, 2), " (a_zero_point) is given without a_scale: a dynamic QMatMul computes "
             "both per row");
  }

  require_dtype(ctx, 3, DType::Int8);
  const auto& b = ctx.input_dims(3);
  if (b && b->size() != 2) ctx.fail(describe_input(ctx, 3), " (B) must be 2-D [K, N]");
  const std::optional<Dim> n = b ? std::optional<Dim>((*b)[1]) : std::nullopt;
  require_dtype(ctx, 4, DType::Float32);
  check_per_column(ctx, 4, n);
  if (ctx.has_input(5)) {
    require_dtype(ctx, 5, DType::Int8);
    check_per_column(ctx, 5, n);
    const auto &s = ctx.input_dims(4), &z = ctx.input_dims(5);
    if (s && z && one_element(s) != one_element(z))
      ctx.fail("b_zero_point ", describe_input(ctx, 5), " and b_scale ", describe_input(ctx, 4),
               " must both be per tensor or both per column");
  }
  if (ctx.has_input(6)) {
    require_dtype(ctx, 6, DType::Float32);
    const auto& bias = ctx.input_dims(6);
    if (bias && bias->size() != 1) ctx.fail(describe_input(ctx, 6), " (bias) must be 1-D [N]");
    if (bias && n && known_differ((*bias)[0], *n))
      ctx.fail(describe_input(ctx, 6), " (bias) has ", (*bias)[0].to_string(), " elements but B has N = ",
               n->to_string());
  }

  if (ctx.has_input(8)) {
    require_dtype(ctx, 8, DType::Float32);
    const auto& c = ctx.input_dims(8);
    const auto& a0 = ctx.input_dims(0);
    if (c && c->size() != 1) ctx.fail(describe_input(ctx, 8), " (a_channel_scale) must be 1-D [K]");
    if (c && a0 && !a0->empty() && known_differ((*c)[0], a0->back()))
      ctx.fail(describe_input(ctx, 8), " (a_channel_scale) has ", (*c)[0].to_string(), " elements but A has K = ",
               a0->back().to_string());
  }

  if (ctx.has_input(9)) {
    require_dtype(ctx, 9, DType::Float32);
    check_per_column(ctx, 9, n);
  }

  std::optional<DimVector> out;
  const auto& a = ctx.input_dims(0);
  if (a && a->empty()) ctx.fail(describe_input(ctx, 0), " (A) must have rank >= 1");
  if (a && b) {
    std::string why;
    out = matmul_output_dims(*a, *b, &why);
    if (!out) ctx.fail(why, " (", describe_input(ctx, 0), ", ", describe_input(ctx, 3), ")");
  }
  if (ctx.has_input(7)) {
    require_dtype(ctx, 7, DType::Float32);
    const auto& r = ctx.input_dims(7);
    if (r && out) {
      bool same = r->size() == out->size();
      for (size_t i = 0; same && i < r->size(); ++i) same = !known_differ((*r)[i], (*out)[i]);
      if (!same)
        ctx.fail(describe_input(ctx, 7), " (the residual) must have the output's shape ", dims_to_string(*out));
    }
  }
  ctx.set_output(0, DType::Float32, out);
}

}  // namespace

void register_octet_quant_ops(OpRegistry& r) { r.add({"octet", "QMatMul", infer_qmatmul}); }

}  // namespace octet
