// Quantize/dequantize: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear. The
// integer matmuls/convolutions are in quant_matmul_ops.cpp.
//
// Opset differences:
// - quantized types: int8/uint8; + float8 (19); + int16/uint16/int4/uint4 (21); + float4
//   (23); + int2/uint2 (25)
// - scale type: float32 up to 18; the input's type in 19-21 (QuantizeLinear); a free
//   float type from 23; float8e8m0 too from 24 (MX scales: powers of two)
// - DequantizeLinear's output follows the scale, or output_dtype (23); with a float8e8m0
//   scale output_dtype is required, as the output is float32, float16 or bfloat16
// - blocked quantization (block_size) and QuantizeLinear's output_dtype from 21
//
// Granularity is read off the scale's shape: a scalar (or one element) is per tensor, a
// 1-D scale is per axis (its length is x.dims[axis]), and a scale of x's rank with
// block_size set is blocked (x.dims[axis] / block_size rounded up along the axis).
// Quantization parameters are not attached to types yet (TensorType::quant stays null).
#include "ops/math_helpers.h"
#include "ops/op_families.h"

namespace octet {
namespace math {
namespace {

bool is_float8(DType t) {
  return t == DType::Float8E4M3FN || t == DType::Float8E4M3FNUZ || t == DType::Float8E5M2 ||
         t == DType::Float8E5M2FNUZ;
}

// The types QuantizeLinear may produce (and DequantizeLinear read, besides int32).
bool is_quantized_type(DType t, int64_t opset) {
  if (t == DType::Int8 || t == DType::UInt8) return true;
  if (opset >= 19 && is_float8(t)) return true;
  if (opset >= 21 && (t == DType::Int16 || t == DType::UInt16 || t == DType::Int4 || t == DType::UInt4))
    return true;
  if (opset >= 23 && t == DType::Float4E2M1) return true;
  return opset >= 25 && (t == DType::Int2 || t == DType::UInt2);
}

std::string quantized_types(int64_t opset) {
  std::string s = "int8, uint8";
  if (opset >= 19) s += ", float8";
  if (opset >= 21) s += ", int16, uint16, int4, uint4";
  if (opset >= 23) s += ", float4e2m1";
  if (opset >= 25) s += ", int2, uint2";
  return s;
}

// True when both sizes are known and differ (a symbolic size may still match at run time).
bool known_differ(const Dim& a, const Dim& b) {
  auto ca = a.constant(), cb = b.constant();
  return ca && cb && *ca != *cb;
}

// Checks the scale (input 1) and zero point (input 2) shapes against x (input 0).
void check_granularity(const InferContext& ctx, int64_t opset) {
  const int64_t block = opset >= 21 ? ctx.node().attr_int("block_size", 0) : 0;
  if (block < 0) ctx.fail("block_size ", block, " is negative");
  const auto& x = ctx.input_dims(0);
  const auto& s = ctx.input_dims(1);
  if (ctx.has_input(2) && s && ctx.input_dims(2)) {
    const DimVector& z = *ctx.input_dims(2);
    // A one-element zero point ([1]) with a scalar scale is per tensor too; the ONNX
    // backend tests pair them that way.
    auto one_element = [](const DimVector& d) { return dims_product(d) == Dim(1); };
    bool conflict = false;
    if (z.size() != s->size())
      conflict = !(one_element(z) && one_element(*s));
    else
      for (size_t i = 0; !conflict && i < z.size(); ++i) conflict = known_differ(z[i], (*s)[i]);
    if (conflict)
      ctx.fail("zero point ", describe_input(ctx, 2), " and scale ", describe_input(ctx, 1),
               " must have the same shape");
  }
  if (!x || !s) return;
  const int64_t rank = static_cast<int64_t>(x->size());
  // A rank-1 x is quantized per tensor whatever `axis` says.
  auto axis = [&] { return rank == 1 ? 0 : normalize_axis(ctx, ctx.node().attr_int("axis", 1), rank); };
  if (block == 0) {
    if (s->empty()) return;
    if (s->size() > 1)
      ctx.fail("scale ", describe_input(ctx, 1), " must be a scalar or 1-D unless block_size is set");
    if ((*s)[0] == Dim(1)) return;  // one element: per tensor
    if (rank == 0) ctx.fail("per-axis scale ", describe_input(ctx, 1), " for a scalar input");
    int64_t a = axis();
    if (known_differ((*s)[0], (*x)[a]))
      ctx.fail("per-axis scale ", describe_input(ctx, 1), " does not match dim ", a, " of ",
               describe_input(ctx, 0));
    return;
  }
  if (static_cast<int64_t>(s->size()) != rank)
    ctx.fail("blocked scale ", describe_input(ctx, 1), " must have the rank of ", describe_input(ctx, 0));
  int64_t a = axis();
  for (int64_t i = 0; i < rank; ++i) {
    Dim want = i == a ? Dim::floor_div((*x)[i] + (block - 1), block) : (*x)[i];
    if (known_differ((*s)[i], want))
      ctx.fail("blocked scale ", describe_input(ctx, 1), " does not match ", describe_input(ctx, 0),
               " with block_size ", block, " on axis ", a, " (dim ", i, " should be ", want.to_string(), ")");
  }
}

bool is_q_input(DType t) { return is_float_type(t) && t != DType::Float64; }
bool is_q_input_or_int32(DType t) { return is_q_input(t) || t == DType::Int32; }
bool is_float32_or_int32(DType t) { return t == DType::Float32 || t == DType::Int32; }
bool is_q_scale_24(DType t) { return is_q_input_or_int32(t) || t == DType::Float8E8M0; }
bool is_dq_scale_24(DType t) { return is_q_input(t) || t == DType::Float8E8M0; }

void infer_quantize(InferContext& ctx) {
  const int64_t opset = onnx_opset(ctx);
  if (opset >= 19)
    require_type(ctx, 0, is_q_input_or_int32, "float32, float16, bfloat16 or int32");
  else
    require_type(ctx, 0, is_float32_or_int32, "float32 or int32");
  if (opset >= 24)
    require_type(ctx, 1, is_q_scale_24, "float32, float16, bfloat16, int32 or float8e8m0");
  else if (opset >= 23)
    require_type(ctx, 1, is_q_input_or_int32, "float32, float16, bfloat16 or int32");
  else if (opset >= 19)
    require_same_type(ctx, 0, 1);  // y_scale shares x's type variable T1
  else
    require_dtype(ctx, 1, DType::Float32);

  DType out = DType::UInt8;
  const int64_t code = opset >= 21 ? ctx.node().attr_int("output_dtype", 0) : 0;
  std::optional<DType> attr_out;
  if (code != 0) {
    attr_out = dtype_from_onnx(static_cast<int32_t>(code));
    if (!attr_out) ctx.fail("output_dtype=", code, " is not a known element type");
    out = *attr_out;
  }
  if (ctx.has_input(2)) {
    DType zp = ctx.input_dtype(2);
    if (attr_out && *attr_out != zp)
      ctx.fail("output_dtype ", dtype_name(*attr_out), " differs from the zero point's type: ",
               describe_input(ctx, 2));
    out = zp;
  }
  if (!is_quantized_type(out, opset))
    ctx.fail("quantized type ", dtype_name(out), " is not allowed at opset ", opset, " (",
             quantized_types(opset), ")");
  check_granularity(ctx, opset);
  ctx.set_output(0, out, ctx.input_dims(0));
}

void infer_dequantize(InferContext& ctx) {
  const int64_t opset = onnx_opset(ctx);
  DType x = ctx.input_dtype(0);
  if (x != DType::Int32 && !is_quantized_type(x, opset))
    ctx.fail(describe_input(ctx, 0), " has element type ", dtype_name(x), "; DequantizeLinear at opset ",
             opset, " reads ", quantized_types(opset), " or int32");
  if (opset >= 24)
    require_type(ctx, 1, is_dq_scale_24, "float32, float16, bfloat16 or float8e8m0");
  else if (opset >= 19)
    require_type(ctx, 1, is_q_input, "float32, float16 or bfloat16");
  else
    require_dtype(ctx, 1, DType::Float32);
  if (ctx.has_input(2)) require_same_type(ctx, 0, 2);
  DType out = ctx.input_dtype(1);
  if (opset >= 23) {
    const int64_t code = ctx.node().attr_int("output_dtype", 0);
    if (code != 0) {
      auto t = dtype_from_onnx(static_cast<int32_t>(code));
      if (!t || !is_q_input(*t))
        ctx.fail("output_dtype=", code, " is not float32, float16 or bfloat16");
      out = *t;
    } else if (out == DType::Float8E8M0) {
      ctx.fail("scale ", describe_input(ctx, 1), " is float8e8m0, so output_dtype must say the output type "
               "(float32, float16 or bfloat16)");
    }
  }
  check_granularity(ctx, opset);
  ctx.set_output(0, out, ctx.input_dims(0));
}

void infer_dynamic_quantize(InferContext& ctx) {
  // uint8 only; the scale and zero point are per-tensor scalars.
  require_dtype(ctx, 0, DType::Float32);
  ctx.set_output(0, DType::UInt8, ctx.input_dims(0));
  ctx.set_output(1, DType::Float32, DimVector{});
  ctx.set_output(2, DType::UInt8, DimVector{});
}

}  // namespace
}  // namespace math

void register_quant_ops(OpRegistry& r) {
  using namespace math;
  r.add({"", "QuantizeLinear", infer_quantize});
  r.add({"", "DequantizeLinear", infer_dequantize});
  r.add({"", "DynamicQuantizeLinear", infer_dynamic_quantize});
  register_quant_matmul_ops(r);
}

}  // namespace octet
