// The int8 fused ops of the `octet` domain (docs/quantization.md §2).
//
//   octet.QMatMul(A, a_scale?, a_zero_point?, B, b_scale, b_zero_point?, bias?, residual?,
//                 a_channel_scale?, output_scale?)
//       attrs: activation = "" | "gelu" | "gelu_tanh", dynamic_type = "uint8" | "int8"
//   Y = (per row m, column n) sa[m] * sb[n] * sum_k (qa[m,k] - za[m]) * (B[k,n] - zb[n])
//       + bias[n], then the activation, then * output_scale[n] (one value or one per column:
//       a LayerScale Mul folded in, fold_matmul_output_scale.cpp), then + residual. qa is A quantized with the given
//       a_scale/a_zero_point (static), or per row of A when a_scale is absent (dynamic).
//       A uint8/int8 is already quantized (qa = A): static only, a_zero_point of A's type
//       (absent: A uint8), no a_channel_scale. A uint8 with an int32 a_zero_point is
//       quantized per row: a_scale and a_zero_point hold one value per row (A's shape
//       without its last dim), as octet.LayerNormQuantize's per-row mode writes them.
//       With y_scale (input 10; y_zero_point, input 11, uint8/int8, absent: uint8 0) Y is
//       that float result quantized: QuantizeLinear(Y, y_scale, y_zero_point), the A of the
//       static QMatMuls that read it (fuse_qmatmul_output_quantize.cpp).
//       With attribute y_dynamic_type ("uint8" | "int8"; no y_scale / y_zero_point) the
//       outputs are (Y uint8, y_scale float32 [rows], y_zero_point int32 [rows]): each row
//       of the float result quantized with the parameters a dynamic QMatMul of that
//       dynamic_type computes for it, in the per-row form LayerNormQuantize's per-row mode
//       writes (int8 stored as uint8 + 128, zero point 128): the A of per-token QMatMuls.
//       With attribute norm_dynamic_type ("uint8" | "int8"; epsilon, default 1e-5;
//       norm_scale, norm_bias?, norm_q_scale?, norm_q_bias? as inputs 12-15, float32 [N])
//       the float Y is also LayerNormQuantize(Y, norm_scale, norm_bias, q_scale =
//       norm_q_scale, q_bias = norm_q_bias) in per-row mode of that dynamic_type: outputs
//       (Y, Q uint8, q_scale [rows], q_zero_point [rows], normalized Y?), the LayerNorm
//       after a residual QMatMul in one node (fuse_qmatmul_layer_norm.cpp).
//
//   octet.LayerNormQuantize(X, scale, bias?, y_scale, y_zero_point?, q_scale?, q_bias?) -> (Q, Y?)
//       attrs: epsilon (default 1e-5)
//   Q = QuantizeLinear(LayerNormalization(X, q_scale, q_bias), y_scale, y_zero_point) over
//       the last axis, with (q_scale, q_bias) = (scale, bias) when q_scale is absent;
//       Y = LayerNormalization(X, scale, bias). One pass writes the uint8/int8 input of
//       the static QMatMuls that read a LayerNorm (fuse_layer_norm_quantize.cpp) and, for a
//       SmoothQuant-smoothed copy of a LayerNorm (gamma / s, beta / s), the float output
//       of the original too.
//       With attribute dynamic_type ("uint8" | "int8"; no y_scale / y_zero_point) each
//       normalized row gets its own parameters, exactly those a dynamic QMatMul computes
//       for it (uint8: the row's min/max range; int8: symmetric max|x| / 127, stored as
//       uint8 with zero point 128, the product's domain): outputs (Q uint8, a_scale
//       float32 [rows], a_zero_point int32 [rows], Y?), the A of per-token QMatMuls.
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
  if (ctx.num_inputs() > 16)
    ctx.fail("takes at most 16 inputs (A, a_scale, a_zero_point, B, b_scale, b_zero_point, bias, residual, "
             "a_channel_scale, output_scale, y_scale, y_zero_point, norm_scale, norm_bias, norm_q_scale, "
             "norm_q_bias), got ", ctx.num_inputs());
  if (!ctx.has_input(3) || !ctx.has_input(4)) ctx.fail("B (input 3) and b_scale (input 4) are required");
  const std::string act = node.attr_string("activation", "");
  if (act != "" && act != "gelu" && act != "gelu_tanh")
    ctx.fail("activation must be \"\", \"gelu\" or \"gelu_tanh\", got \"", act, "\"");
  const bool is_static = ctx.has_input(1);
  if (node.has_attr("dynamic_type")) {
    const std::string dyn = node.attr_string("dynamic_type", "uint8");
    if (dyn != "uint8" && dyn != "int8") ctx.fail("dynamic_type must be \"uint8\" or \"int8\", got \"", dyn, "\"");
    // A quantized per row (int32 a_zero_point) keeps the attribute: how its producer quantized.
    const bool per_row = ctx.has_input(2) && ctx.input_dtype(2) == DType::Int32;
    if (is_static && !per_row)
      ctx.fail("dynamic_type applies only without a_scale (dynamic quantization); input 1 is given");
  }

  const bool quantized_a = ctx.input_dtype(0) == DType::UInt8 || ctx.input_dtype(0) == DType::Int8;
  // A quantized per row (octet.LayerNormQuantize with dynamic_type): uint8 A, a_scale
  // float32 and a_zero_point int32 with one value per row (A's leading dims).
  const bool per_row_a = quantized_a && ctx.has_input(2) && ctx.input_dtype(2) == DType::Int32;
  if (per_row_a) {
    if (ctx.input_dtype(0) != DType::UInt8)
      ctx.fail(describe_input(ctx, 2), " (a_zero_point) is int32 (one per row): A must be uint8, got ",
               dtype_name(ctx.input_dtype(0)));
    if (!is_static) ctx.fail("an int32 a_zero_point (per row) needs a_scale (input 1)");
    if (ctx.has_input(8)) ctx.fail("a_channel_scale applies to a float A only; A is uint8");
    require_dtype(ctx, 1, DType::Float32);
    const auto& a0 = ctx.input_dims(0);
    for (size_t i : {size_t{1}, size_t{2}}) {
      const auto& d = ctx.input_dims(i);
      if (!a0 || !d || a0->empty()) continue;
      bool same = d->size() + 1 == a0->size();
      for (size_t j = 0; same && j < d->size(); ++j) same = !known_differ((*d)[j], (*a0)[j]);
      if (!same)
        ctx.fail(describe_input(ctx, i), " must have one value per row of A ", describe_input(ctx, 0),
                 " (A's shape without its last dim)");
    }
  } else if (quantized_a) {
    if (!is_static) ctx.fail(describe_input(ctx, 0), " (A) is already quantized: a_scale (input 1) is required");
    const DType zp = ctx.has_input(2) ? ctx.input_dtype(2) : DType::UInt8;
    if (zp != ctx.input_dtype(0))
      ctx.fail(describe_input(ctx, 0), " (A) is quantized but a_zero_point is ", dtype_name(zp),
               " (absent: uint8); they must have one type");
    if (ctx.has_input(8)) ctx.fail("a_channel_scale applies to a float A only; A is ", dtype_name(ctx.input_dtype(0)));
  } else {
    require_dtype(ctx, 0, DType::Float32);
  }
  if (per_row_a) {
    // checked above
  } else if (is_static) {
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
  if (node.has_attr("y_dynamic_type")) {
    if (node.has_attr("norm_dynamic_type")) ctx.fail("y_dynamic_type and norm_dynamic_type exclude each other");
    const std::string dyn = node.attr_string("y_dynamic_type", "uint8");
    if (dyn != "uint8" && dyn != "int8") ctx.fail("y_dynamic_type must be \"uint8\" or \"int8\", got \"", dyn, "\"");
    if (ctx.has_input(10) || ctx.has_input(11))
      ctx.fail("y_scale / y_zero_point (inputs 10, 11) are given with y_dynamic_type: each row of Y gets its own "
               "scale and zero point");
    if (ctx.num_outputs() != 3)
      ctx.fail("with y_dynamic_type has outputs Y, y_scale and y_zero_point, got ", ctx.num_outputs());
    std::optional<DimVector> rows;
    if (out) rows = DimVector(out->begin(), out->end() - 1);
    ctx.set_output(0, DType::UInt8, out);
    ctx.set_output(1, DType::Float32, rows);
    ctx.set_output(2, DType::Int32, rows);
    return;
  }
  const bool norm = node.has_attr("norm_dynamic_type");
  if (!norm)
    for (size_t i = 12; i < 16; ++i)
      if (ctx.has_input(i)) ctx.fail("input ", i, " (a LayerNorm parameter) is given without norm_dynamic_type");
  if (norm) {
    // Y (float) normalized and quantized per row as LayerNormQuantize's per-row mode:
    // outputs (Y, Q uint8, q_scale [rows], q_zero_point [rows], normalized Y?).
    const std::string dyn = node.attr_string("norm_dynamic_type", "uint8");
    if (dyn != "uint8" && dyn != "int8") ctx.fail("norm_dynamic_type must be \"uint8\" or \"int8\", got \"", dyn, "\"");
    if (ctx.has_input(10) || ctx.has_input(11)) ctx.fail("y_scale / y_zero_point are given with norm_dynamic_type");
    if (!ctx.has_input(12)) ctx.fail("norm_dynamic_type needs norm_scale (input 12)");
    if (ctx.has_input(15) && !ctx.has_input(14)) ctx.fail("norm_q_bias (input 15) is given without norm_q_scale (input 14)");
    for (size_t i = 12; i < 16; ++i) {
      if (!ctx.has_input(i)) continue;
      require_dtype(ctx, i, DType::Float32);
      const auto& d = ctx.input_dims(i);
      if (d && d->size() != 1) ctx.fail(describe_input(ctx, i), " (a LayerNorm parameter) must be 1-D [N]");
      if (d && n && known_differ((*d)[0], *n))
        ctx.fail(describe_input(ctx, i), " has ", (*d)[0].to_string(), " elements but B has N = ", n->to_string());
    }
    if (ctx.num_outputs() < 4 || ctx.num_outputs() > 5)
      ctx.fail("with norm_dynamic_type has outputs Y, Q, q_scale, q_zero_point and (optional) the normalized Y, got ",
               ctx.num_outputs());
    std::optional<DimVector> rows;
    if (out) rows = DimVector(out->begin(), out->end() - 1);
    ctx.set_output(0, DType::Float32, out);
    ctx.set_output(1, DType::UInt8, out);
    ctx.set_output(2, DType::Float32, rows);
    ctx.set_output(3, DType::Int32, rows);
    if (ctx.num_outputs() == 5) ctx.set_output(4, DType::Float32, out);
    return;
  }
  if (ctx.num_outputs() != 1) ctx.fail("has one output Y (three with y_dynamic_type), got ", ctx.num_outputs());
  DType y_type = DType::Float32;
  if (ctx.has_input(10)) {
    require_dtype(ctx, 10, DType::Float32);
    if (!one_element(ctx.input_dims(10))) ctx.fail(describe_input(ctx, 10), " (y_scale) must be a scalar");
    y_type = DType::UInt8;
  }
  if (ctx.has_input(11)) {
    if (!ctx.has_input(10)) ctx.fail("y_zero_point (input 11) is given without y_scale (input 10)");
    math::require_type(ctx, 11, is_8bit, "uint8 or int8");
    if (!one_element(ctx.input_dims(11))) ctx.fail(describe_input(ctx, 11), " (y_zero_point) must be a scalar");
    y_type = ctx.input_dtype(11);
  }
  ctx.set_output(0, y_type, out);
}

// A float32 [K] LayerNorm parameter (K = X's last dim when both are known).
void check_row_param(const InferContext& ctx, size_t i, const std::optional<DimVector>& x) {
  require_dtype(ctx, i, DType::Float32);
  const auto& d = ctx.input_dims(i);
  if (d && d->size() != 1) ctx.fail(describe_input(ctx, i), " must be 1-D [K] (K = X's last dim)");
  if (d && x && !x->empty() && known_differ((*d)[0], x->back()))
    ctx.fail(describe_input(ctx, i), " has ", (*d)[0].to_string(), " elements; X's last dim is ",
             x->back().to_string());
}

// Per-row mode (attribute dynamic_type): no y_scale / y_zero_point; outputs (Q uint8,
// a_scale float32 [rows], a_zero_point int32 [rows], Y?), rows = X's leading dims.
void infer_layer_norm_quantize_per_row(InferContext& ctx, const std::optional<DimVector>& x) {
  const std::string dyn = ctx.node().attr_string("dynamic_type", "uint8");
  if (dyn != "uint8" && dyn != "int8") ctx.fail("dynamic_type must be \"uint8\" or \"int8\", got \"", dyn, "\"");
  if (ctx.has_input(3) || ctx.has_input(4))
    ctx.fail("y_scale / y_zero_point (inputs 3, 4) are given with dynamic_type: per-row mode computes each row's "
             "scale and zero point");
  if (ctx.num_outputs() < 3 || ctx.num_outputs() > 4)
    ctx.fail("with dynamic_type has outputs Q, a_scale, a_zero_point and (optional) Y, got ", ctx.num_outputs());
  std::optional<DimVector> rows;
  if (x) rows = DimVector(x->begin(), x->end() - 1);
  ctx.set_output(0, DType::UInt8, x);
  ctx.set_output(1, DType::Float32, rows);
  ctx.set_output(2, DType::Int32, rows);
  if (ctx.num_outputs() == 4) ctx.set_output(3, DType::Float32, x);
}

void infer_layer_norm_quantize(InferContext& ctx) {
  if (ctx.num_inputs() > 7)
    ctx.fail("takes at most 7 inputs (X, scale, bias, y_scale, y_zero_point, q_scale, q_bias), got ",
             ctx.num_inputs());
  if (!ctx.has_input(1)) ctx.fail("scale (input 1) is required");
  require_dtype(ctx, 0, DType::Float32);
  const auto& x = ctx.input_dims(0);
  if (x && x->empty()) ctx.fail(describe_input(ctx, 0), " (X) must have rank >= 1");
  for (size_t i : {size_t{1}, size_t{2}, size_t{5}, size_t{6}})
    if (ctx.has_input(i)) check_row_param(ctx, i, x);
  if (ctx.has_input(6) && !ctx.has_input(5)) ctx.fail("q_bias (input 6) is given without q_scale (input 5)");
  if (ctx.node().has_attr("dynamic_type")) return infer_layer_norm_quantize_per_row(ctx, x);
  if (ctx.num_outputs() < 1 || ctx.num_outputs() > 2) ctx.fail("has outputs Q and (optional) Y, got ", ctx.num_outputs());
  if (!ctx.has_input(3)) ctx.fail("y_scale (input 3) is required (or dynamic_type, for per-row parameters)");
  require_dtype(ctx, 3, DType::Float32);
  if (!one_element(ctx.input_dims(3))) ctx.fail(describe_input(ctx, 3), " (y_scale) must be a scalar");
  DType q = DType::UInt8;
  if (ctx.has_input(4)) {
    math::require_type(ctx, 4, is_8bit, "uint8 or int8");
    if (!one_element(ctx.input_dims(4))) ctx.fail(describe_input(ctx, 4), " (y_zero_point) must be a scalar");
    q = ctx.input_dtype(4);
  }
  ctx.set_output(0, q, x);
  if (ctx.num_outputs() == 2) ctx.set_output(1, DType::Float32, x);
}

}  // namespace

void register_octet_quant_ops(OpRegistry& r) {
  r.add({"octet", "QMatMul", infer_qmatmul});
  r.add({"octet", "LayerNormQuantize", infer_layer_norm_quantize});
}

}  // namespace octet
