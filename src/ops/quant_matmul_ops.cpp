// Integer and weight-quantized products: MatMulInteger, QLinearMatMul, ConvInteger and
// com.microsoft MatMulNBits. Shapes come from the shared matmul_shape.h / conv_shape.h.
#include "ops/conv_shape.h"
#include "ops/math_helpers.h"
#include "ops/matmul_shape.h"

namespace octet::math {
namespace {

bool is_8bit(DType t) { return t == DType::Int8 || t == DType::UInt8; }
bool is_float8(DType t) {
  return t == DType::Float8E4M3FN || t == DType::Float8E4M3FNUZ || t == DType::Float8E5M2 ||
         t == DType::Float8E5M2FNUZ;
}
bool is_8bit_or_float8(DType t) { return is_8bit(t) || is_float8(t); }

bool known_differ(const Dim& a, const Dim& b) {
  auto ca = a.constant(), cb = b.constant();
  return ca && cb && *ca != *cb;
}

// Matmul of inputs a and b, or nullopt when a rank is unknown; an error naming the node
// when the shapes cannot multiply.
std::optional<DimVector> matmul_dims(const InferContext& ctx, size_t a, size_t b) {
  const auto& da = ctx.input_dims(a);
  const auto& db = ctx.input_dims(b);
  if (!da || !db) return std::nullopt;
  std::string why;
  auto out = matmul_output_dims(*da, *db, &why);
  if (!out) ctx.fail(why, " (", describe_input(ctx, a), ", ", describe_input(ctx, b), ")");
  return out;
}

// A 1-D zero point holds one value per row of A (per column of B): its length is 1 or
// that count.
void check_zero_point_length(const InferContext& ctx, size_t zp, const Dim& count) {
  const auto& d = ctx.input_dims(zp);
  if (!d) return;
  if (d->size() == 1 && (*d)[0] != Dim(1) && known_differ((*d)[0], count))
    ctx.fail(describe_input(ctx, zp), " has ", (*d)[0].to_string(), " values; expected 1 or ",
             count.to_string());
}

void infer_matmul_integer(InferContext& ctx) {
  require_type(ctx, 0, is_8bit, "int8 or uint8");
  require_type(ctx, 1, is_8bit, "int8 or uint8");
  if (ctx.has_input(2)) require_same_type(ctx, 0, 2);
  if (ctx.has_input(3)) require_same_type(ctx, 1, 3);
  const auto& a = ctx.input_dims(0);
  const auto& b = ctx.input_dims(1);
  // a_zero_point is per row of A (rows = A's second-to-last dim), b_zero_point per column.
  if (ctx.has_input(2) && a && a->size() >= 2) check_zero_point_length(ctx, 2, (*a)[a->size() - 2]);
  if (ctx.has_input(3) && b && b->size() >= 2) check_zero_point_length(ctx, 3, b->back());
  ctx.set_output(0, DType::Int32, matmul_dims(ctx, 0, 1));
}

void infer_qlinear_matmul(InferContext& ctx) {
  // a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
  const int64_t opset = onnx_opset(ctx);
  bool (*q_ok)(DType) = opset >= 21 ? is_8bit_or_float8 : is_8bit;
  const char* q_names = opset >= 21 ? "int8, uint8 or a float8 type" : "int8 or uint8";
  for (size_t i : {0, 3, 7}) require_type(ctx, i, q_ok, q_names);
  require_same_type(ctx, 0, 2);
  require_same_type(ctx, 3, 5);
  for (size_t i : {1, 4, 6}) {
    if (opset >= 21)
      require_type(ctx, i, is_float_type, kFloatTypes);
    else
      require_dtype(ctx, i, DType::Float32);
  }
  ctx.set_output(0, ctx.input_dtype(7), matmul_dims(ctx, 0, 3));
}

void infer_conv_integer(InferContext& ctx) {
  require_type(ctx, 0, is_8bit, "int8 or uint8");
  require_type(ctx, 1, is_8bit, "int8 or uint8");
  if (ctx.has_input(2)) require_same_type(ctx, 0, 2);
  if (ctx.has_input(3)) require_same_type(ctx, 1, 3);
  const Node& n = ctx.node();
  const auto& x = ctx.input_dims(0);
  if (!x) return ctx.set_output(0, DType::Int32, std::nullopt);
  if (x->size() < 3) ctx.fail(describe_input(ctx, 0), " must be [N, C, spatial...] (rank >= 3)");
  const size_t spatial = x->size() - 2;
  const int64_t group = n.attr_int("group", 1);
  if (group < 1) ctx.fail("group ", group, " must be positive");
  const std::vector<int64_t> kernel_attr = n.attr_ints("kernel_shape");
  if (!kernel_attr.empty() && kernel_attr.size() != spatial)
    ctx.fail("kernel_shape has ", kernel_attr.size(), " values for ", spatial, " spatial dims");

  Dim m = Dim::fresh("channels");
  DimVector kernel;
  if (const auto& w = ctx.input_dims(1)) {
    if (w->size() != x->size())
      ctx.fail(describe_input(ctx, 1), " must have the rank of ", describe_input(ctx, 0));
    m = (*w)[0];
    if (known_differ((*w)[1] * group, (*x)[1]))
      ctx.fail("channels: ", describe_input(ctx, 0), " has ", (*x)[1].to_string(), ", weights ",
               describe_input(ctx, 1), " expect ", ((*w)[1] * group).to_string(), " (group ", group, ")");
    if (auto cm = m.constant(); cm && *cm % group != 0)
      ctx.fail("output channels ", *cm, " are not divisible by group ", group);
    kernel.assign(w->begin() + 2, w->end());
  }
  if (!kernel_attr.empty()) {
    for (size_t i = 0; i < kernel.size(); ++i)
      if (known_differ(kernel[i], kernel_attr[i]))
        ctx.fail("kernel_shape ", dims_to_string(DimVector(kernel_attr.begin(), kernel_attr.end())),
                 " disagrees with ", describe_input(ctx, 1));
    kernel.assign(kernel_attr.begin(), kernel_attr.end());
  }

  DimVector out = {(*x)[0], m};
  if (kernel.empty()) {
    for (size_t i = 0; i < spatial; ++i) out.push_back(Dim::fresh("spatial"));
    return ctx.set_output(0, DType::Int32, out);
  }
  ConvGeometry g;
  g.strides = n.attr_ints("strides");
  g.dilations = n.attr_ints("dilations");
  g.pads = n.attr_ints("pads");
  g.auto_pad = n.attr_string("auto_pad", "NOTSET");
  std::string why;
  auto sp = conv_output_spatial(DimVector(x->begin() + 2, x->end()), kernel, g, &why);
  if (!sp) ctx.fail(why, " (", describe_input(ctx, 0), ")");
  out.insert(out.end(), sp->begin(), sp->end());
  ctx.set_output(0, DType::Int32, out);
}

// com.microsoft MatMulNBits: A [..., K] times a block-quantized B^T [N, K] -> [..., N].
// B is packed as [N, ceil(K / block_size), block_size * bits / 8] uint8.
void infer_matmul_nbits(InferContext& ctx) {
  const Node& n = ctx.node();
  for (const char* a : {"K", "N", "block_size"})
    if (!n.has_attr(a)) ctx.fail("attribute '", a, "' is required");
  const int64_t k = n.attr_int("K", 0), nn = n.attr_int("N", 0);
  const int64_t bits = n.attr_int("bits", 4), block = n.attr_int("block_size", 0);
  if (k <= 0 || nn <= 0) ctx.fail("K=", k, " and N=", nn, " must be positive");
  if (bits < 2 || bits > 8) ctx.fail("bits=", bits, " is outside 2..8");
  if (block < 16 || (block & (block - 1)) != 0)
    ctx.fail("block_size=", block, " must be a power of 2 and at least 16");
  require_type(ctx, 0, is_float_type, kFloatTypes);
  require_type(ctx, 1, [](DType t) { return t == DType::UInt8 || t == DType::Int32; }, "uint8 or int32");
  require_type(ctx, 2, is_float_type, kFloatTypes);
  if (ctx.has_input(5)) require_same_type(ctx, 0, 5);

  const int64_t k_blocks = (k + block - 1) / block;
  if (const auto& b = ctx.input_dims(1); b && b->size() == 3 && ctx.input_dtype(1) == DType::UInt8) {
    const Dim want[3] = {nn, k_blocks, block * bits / 8};
    for (int i = 0; i < 3; ++i)
      if (known_differ((*b)[i], want[i]))
        ctx.fail(describe_input(ctx, 1), " should be [", nn, ",", k_blocks, ",", block * bits / 8,
                 "] for K=", k, " N=", nn, " bits=", bits, " block_size=", block);
  }
  if (const auto& s = ctx.input_dims(2)) {
    auto count = dims_product(*s).constant();
    if (count && *count != nn * k_blocks)
      ctx.fail(describe_input(ctx, 2), " has ", *count, " scales; expected N * ceil(K / block_size) = ",
               nn * k_blocks);
  }
  if (ctx.has_input(5)) {
    const auto& bias = ctx.input_dims(5);
    if (bias && (bias->size() != 1 || known_differ((*bias)[0], nn)))
      ctx.fail(describe_input(ctx, 5), " must be [", nn, "]");
  }
  const auto& a = ctx.input_dims(0);
  if (!a) return ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
  if (a->empty()) ctx.fail(describe_input(ctx, 0), " must have rank >= 1");
  if (known_differ(a->back(), k))
    ctx.fail(describe_input(ctx, 0), " has last dim ", a->back().to_string(), "; attribute K is ", k);
  DimVector out = *a;
  out.back() = nn;
  ctx.set_output(0, ctx.input_dtype(0), out);
}

}  // namespace

void register_quant_matmul_ops(OpRegistry& r) {
  r.add({"", "MatMulInteger", infer_matmul_integer});
  r.add({"", "QLinearMatMul", infer_qlinear_matmul});
  r.add({"", "ConvInteger", infer_conv_integer});
  r.add({"com.microsoft", "MatMulNBits", infer_matmul_nbits});
}

}  // namespace octet::math
