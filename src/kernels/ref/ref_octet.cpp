// Reference kernels for the octet-domain fused ops (see src/ops/octet_ops.cpp).
//
// Each one runs the ai.onnx reference kernels it replaces, in the same order and with the
// same roundings, so the oracle for a fused op is the unfused graph by construction:
// octet.MatMulBias is bit-identical to MatMul followed by Add (then Gelu, then Add of the
// residual, when its epilogue has them; then Split of the last axis, with `split`),
// octet.Gelu to ONNX Gelu, octet.RMSNormalization to ONNX RMSNormalization,
// octet.ApplyRotary to its Slice, Slice, Neg, Concat, Mul, Mul, Add, octet.MatMulNBits to
// com.microsoft.MatMulNBits and Add or Split, octet.SwiGLU to Split (one input), Sigmoid,
// Mul, Mul. Optimized kernels are tested against these.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_math_dtype.h"
#include "kernels/ref/ref_octet_epilogue.h"

namespace octet {
namespace ref {
namespace {

// The ONNX Gelu kernel reads `approximate` from its node, so the epilogue runs it on a
// node of its own: one per mode, in a graph that lives as long as the process.
const Node& gelu_node(bool tanh) {
  static const std::shared_ptr<Graph> g = [] {
    auto graph = std::make_shared<Graph>();
    graph->opset_imports[""] = 20;
    graph->add_input("x", TensorType(DType::Float32, DimVector{}));
    graph->add_node("Gelu", {"x"}, {"erf"}, {Attribute::make_string("approximate", "none")}, "", "epilogue_gelu");
    graph->add_node("Gelu", {"x"}, {"tanh"}, {Attribute::make_string("approximate", "tanh")}, "", "epilogue_gelu_tanh");
    return graph;
  }();
  return *g->nodes()[tanh ? 1 : 0];
}

}  // namespace

Tensor run_onnx_kernel(const char* op, const Node& node, std::vector<const Tensor*> inputs) {
  KernelFn fn = KernelRegistry::reference().find("", op);
  OCTET_ASSERT(fn, "no reference kernel for ai.onnx ", op);
  KernelContext sub(node, std::move(inputs));
  fn(sub);
  return std::move(sub.outputs()[0]);
}

Tensor gelu_epilogue(const Tensor& y, bool tanh) { return run_onnx_kernel("Gelu", gelu_node(tanh), {&y}); }

}  // namespace ref

namespace {

KernelFn onnx_kernel(const char* op) {
  KernelFn fn = KernelRegistry::reference().find("", op);
  OCTET_ASSERT(fn, "no reference kernel for ai.onnx ", op);
  return fn;
}

void gelu_kernel(KernelContext& ctx) { onnx_kernel("Gelu")(ctx); }

void rms_norm_kernel(KernelContext& ctx) { onnx_kernel("RMSNormalization")(ctx); }

// The ONNX nodes rotate_half is made of (Slice reads its bounds from inputs, Concat its
// axis from the node), in a graph that lives as long as the process.
const Graph& rotary_nodes() {
  static const std::shared_ptr<Graph> g = [] {
    auto graph = std::make_shared<Graph>();
    graph->opset_imports[""] = 13;
    for (const char* name : {"x", "starts", "ends", "axes"})
      graph->add_input(name, TensorType(std::string(name) == "x" ? DType::Float32 : DType::Int64, std::nullopt));
    graph->add_node("Slice", {"x", "starts", "ends", "axes"}, {"part"}, {}, "", "rotary_slice");
    graph->add_node("Concat", {"x", "x"}, {"joined"}, {Attribute::make_int("axis", -1)}, "", "rotary_concat");
    return graph;
  }();
  return *g;
}

// X * cos + rotate_half(X) * sin, by the ai.onnx kernels the fusion replaced, in its order.
void apply_rotary_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& cos = ctx.input(1);
  const Tensor& sin = ctx.input(2);
  if (x.rank() < 1) ctx.fail("X ", x.describe(), " must have rank >= 1");
  const int64_t d = x.shape().back();
  if (d % 2 != 0) ctx.fail("X ", x.describe(), " has an odd last dim; rotate_half splits it in two halves");
  if (cos.dtype() != x.dtype() || sin.dtype() != x.dtype())
    ctx.fail("cos ", cos.describe(), " and sin ", sin.describe(), " must have X's type ", x.describe());
  const Graph& g = rotary_nodes();
  const Node& slice = *g.nodes()[0];
  const Node& concat = *g.nodes()[1];
  const Tensor axis = Tensor::from_vector<int64_t>({1}, {-1});
  const Tensor zero = Tensor::from_vector<int64_t>({1}, {0});
  const Tensor half = Tensor::from_vector<int64_t>({1}, {d / 2});
  const Tensor end = Tensor::from_vector<int64_t>({1}, {d});
  Tensor x1 = ref::run_onnx_kernel("Slice", slice, {&x, &zero, &half, &axis});
  Tensor x2 = ref::run_onnx_kernel("Slice", slice, {&x, &half, &end, &axis});
  Tensor neg = ref::run_onnx_kernel("Neg", ctx.node(), {&x2});
  Tensor rotated = ref::run_onnx_kernel("Concat", concat, {&neg, &x1});
  Tensor a = ref::run_onnx_kernel("Mul", ctx.node(), {&x, &cos});
  Tensor b = ref::run_onnx_kernel("Mul", ctx.node(), {&rotated, &sin});
  Tensor y = ref::run_onnx_kernel("Add", ctx.node(), {&a, &b});
  if (y.shape() != x.shape())
    ctx.fail("cos ", cos.describe(), " and sin ", sin.describe(), " must broadcast into X ", x.describe(),
             " without growing it");
  ctx.set_output(0, std::move(y));
}

// Y's last axis as the parts `split` names, one output each (ONNX Split of the last axis).
void set_split_outputs(KernelContext& ctx, const Tensor& y, const std::vector<int64_t>& split) {
  const int64_t N = y.shape().back(), rows = y.numel() / std::max<int64_t>(N, 1), size = dtype_bits(y.dtype()) / 8;
  int64_t start = 0;
  for (size_t i = 0; i < split.size(); ++i) {
    if (split[i] <= 0 || start + split[i] > N) ctx.fail("split parts must be positive and sum to N = ", N);
    std::vector<int64_t> shape = y.shape();
    shape.back() = split[i];
    Tensor part(y.dtype(), shape);
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(part.mutable_raw() + r * split[i] * size, y.raw() + (r * N + start) * size,
                  static_cast<size_t>(split[i] * size));
    ctx.set_output(i, std::move(part));
    start += split[i];
  }
  if (start != N) ctx.fail("split parts sum to ", start, ", not N = ", N);
}

// com.microsoft.MatMulNBits on inputs 0-5, then Add of the residual (input 6), or Y's
// columns cut into the `split` parts.
void matmul_nbits_octet_kernel(KernelContext& ctx) {
  KernelFn nbits = KernelRegistry::reference().find("com.microsoft", "MatMulNBits");
  OCTET_ASSERT(nbits, "no reference kernel for com.microsoft MatMulNBits");
  const Tensor* residual = ctx.optional_input(6);
  const std::vector<int64_t> split = ctx.node().attr_ints("split", {});
  if (!residual == split.empty()) ctx.fail("needs either a residual (input 6) or a split attribute, and not both");
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < 6; ++i) ins.push_back(ctx.optional_input(i));
  KernelContext sub(ctx.node(), std::move(ins));
  nbits(sub);
  Tensor& y = sub.outputs()[0];
  if (residual) {
    if (residual->dtype() != y.dtype()) ctx.fail("residual is ", residual->describe(), " but Y is ", y.describe());
    Tensor sum = ref::run_onnx_kernel("Add", ctx.node(), {&y, residual});
    if (sum.shape() != y.shape())
      ctx.fail("residual ", residual->describe(), " does not broadcast into the output ", y.describe());
    return ctx.set_output(0, std::move(sum));
  }
  set_split_outputs(ctx, y, split);
}

// (G * Sigmoid(G)) * U by the ai.onnx kernels, G and U the halves of X's last axis where
// the node has one input (Split, as a merged gate/up projection's reader would).
void swiglu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 1) ctx.fail("X ", x.describe(), " must have rank >= 1");
  Tensor halves[2];
  const Tensor* g = &x;
  const Tensor* u = ctx.optional_input(1);
  if (ctx.num_inputs() > 2) ctx.fail("takes 1 input (X) or 2 (G, U), got ", ctx.num_inputs());
  if (u) {
    if (u->dtype() != x.dtype() || u->shape() != x.shape())
      ctx.fail("G ", x.describe(), " and U ", u->describe(), " must have the same type and shape");
  } else {
    const int64_t d = x.shape().back();
    if (d % 2 != 0) ctx.fail("X ", x.describe(), " has an odd last dim; gate and up are its two halves");
    const Graph& graph = rotary_nodes();  // its Slice reads its bounds from inputs
    const Node& slice = *graph.nodes()[0];
    const Tensor axis = Tensor::from_vector<int64_t>({1}, {-1});
    const Tensor zero = Tensor::from_vector<int64_t>({1}, {0});
    const Tensor half = Tensor::from_vector<int64_t>({1}, {d / 2});
    const Tensor end = Tensor::from_vector<int64_t>({1}, {d});
    halves[0] = ref::run_onnx_kernel("Slice", slice, {&x, &zero, &half, &axis});
    halves[1] = ref::run_onnx_kernel("Slice", slice, {&x, &half, &end, &axis});
    g = &halves[0], u = &halves[1];
  }
  Tensor s = ref::run_onnx_kernel("Sigmoid", ctx.node(), {g});
  Tensor gs = ref::run_onnx_kernel("Mul", ctx.node(), {g, &s});
  ctx.set_output(0, ref::run_onnx_kernel("Mul", ctx.node(), {&gs, u}));
}

void matmul_bias_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor* bias = ctx.optional_input(2);  // absent: a bias-free Linear layer
  if (b.rank() < 2) ctx.fail("B ", b.describe(), " must have rank >= 2");
  const int64_t n = b.shape().back();
  if (bias && (bias->rank() != 1 || bias->shape()[0] != n))
    ctx.fail("bias ", bias->describe(), " must be 1-D with N = ", n, " elements");
  if (bias && bias->dtype() != a.dtype()) ctx.fail("bias is ", bias->describe(), " but A is ", a.describe());
  const std::string act = ctx.node().attr_string("activation", "");
  if (act != "" && act != "gelu" && act != "gelu_tanh")
    ctx.fail("activation must be \"\", \"gelu\" or \"gelu_tanh\", got \"", act, "\"");
  const Tensor* residual = ctx.optional_input(3);

  Tensor y = ref::run_onnx_kernel("MatMul", ctx.node(), {&a, &b});
  if (bias) ref::dispatch<ref::FloatTypes>(ctx, a.dtype(), "A", [&](auto tag) {
    using S = typename decltype(tag)::type;
    S* out = ref::data_as<S>(y);
    const S* pb = ref::data_as<S>(*bias);
    const int64_t count = y.numel();
    for (int64_t i = 0; i < count; ++i)
      out[i] = ref::store<S>(ref::load(out[i]) + ref::load(pb[i % n]));
  });
  if (!act.empty()) y = ref::gelu_epilogue(y, act == "gelu_tanh");
  if (residual) {
    if (residual->dtype() != a.dtype()) ctx.fail("residual is ", residual->describe(), " but A is ", a.describe());
    Tensor sum = ref::run_onnx_kernel("Add", ctx.node(), {&y, residual});
    if (sum.shape() != y.shape())
      ctx.fail("residual ", residual->describe(), " does not broadcast into the output ", y.describe());
    y = std::move(sum);
  }
  const std::vector<int64_t> split = ctx.node().attr_ints("split", {});
  if (split.empty()) return ctx.set_output(0, std::move(y));
  if (residual) ctx.fail("takes a residual or a split attribute, not both");
  set_split_outputs(ctx, y, split);
}

}  // namespace

void register_ref_octet(KernelRegistry& r) {
  r.add("octet", "ApplyRotary", apply_rotary_kernel);
  r.add("octet", "Gelu", gelu_kernel);
  r.add("octet", "MatMulBias", matmul_bias_kernel);
  r.add("octet", "MatMulNBits", matmul_nbits_octet_kernel);
  r.add("octet", "RMSNormalization", rms_norm_kernel);
  r.add("octet", "SwiGLU", swiglu_kernel);
  register_ref_attention(r);
  register_ref_grouped_attention(r);
  register_ref_octet_quant(r);
}

}  // namespace octet
