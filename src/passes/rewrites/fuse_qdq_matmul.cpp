// MatMul(DQ(Q(x)), DQ(W_q)) [+ Add(bias)]  -> octet.QMatMul(x, s, z, W_q, w_s, w_z[, bias])
// Gemm(DQ(Q(x)), DQ(W_q)[, C])             -> the same
//
// Why: a quantized model (octet quantize, onnxruntime's quantizer) says "this matmul runs
// in int8" with Q/DQ pairs around a float MatMul. Run literally, that is two extra passes
// over memory and a float GEMM. octet.QMatMul (docs/quantization.md §2) is the int8
// kernel: it quantizes x itself while packing it, multiplies in int8 with int32
// accumulation, and applies the scales, bias (and later GeLU and residual, through
// fuse_matmul_epilogue) in one epilogue. Its definition is the integer form of what the
// Q/DQ graph computes, so results agree to float rounding.
//
// Rules: the activation side is a per-tensor fake quantization (pattern.h fake_quant_of)
// of a float32 tensor; the weight side is a DequantizeLinear of a constant 2-D int8 W_q
// whose scale is one element or one per output column (axis 1; axis 0 for Gemm transB=1)
// and whose zero point, if any, has the scale's shape. The Q/DQ nodes stay for other
// readers and dead code elimination takes them otherwise. A Gemm needs transA=0,
// alpha=1, and a C that is a 1-D [N] constant with beta=1 (or no C); with transB=1 W_q is
// transposed into a new initializer (never the original, which may be shared).
//
// A Mul of x by a constant per-channel vector c ([K], or [1, .., K]) whose only readers
// are QuantizeLinear nodes (SmoothQuant's explicit 1/s, docs/quantization.md §5) folds
// into the QMatMul as a_channel_scale: the kernel scales each row while quantizing it,
// so the Mul's pass over memory disappears and the result is the same float32 products.
#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

struct WeightSide {
  Value* data = nullptr;  // int8 [K, N] (or [N, K] when transposed)
  Value* scale = nullptr;
  Value* zero_point = nullptr;
  bool transposed = false;
};

struct Match {
  Node* node = nullptr;  // MatMul or Gemm
  Node* add = nullptr;   // the bias Add after a MatMul, if fused
  FakeQuant a;
  WeightSide w;
  Value* bias = nullptr;
  Value* channel_scale = nullptr;  // a folded Mul(x, c): c
  int64_t n = 0;
};

// DQ(W_q) with W_q a constant int8 matrix, scales per tensor or along `axis`.
std::optional<WeightSide> weight_side(const Value* v, bool transposed) {
  Node* dq = producer(v, "DequantizeLinear");
  if (!dq) return std::nullopt;
  const Tensor* data = constant_value(dq->input(0));
  const Tensor* scale = constant_value(dq->input(1));
  if (!data || data->dtype() != DType::Int8 || data->rank() != 2) return std::nullopt;
  if (!scale || scale->dtype() != DType::Float32) return std::nullopt;
  const int64_t channel_axis = transposed ? 0 : 1;
  const int64_t n = data->shape()[static_cast<size_t>(channel_axis)];
  if (scale->numel() != 1) {
    int64_t axis = dq->attr_int("axis", 1);
    if (axis < 0) axis += 2;
    if (scale->rank() != 1 || scale->numel() != n || axis != channel_axis) return std::nullopt;
  }
  if (dq->has_attr("block_size") && dq->attr_int("block_size", 0) != 0) return std::nullopt;
  if (Value* zp = dq->input(2)) {
    const Tensor* z = constant_value(zp);
    if (!z || z->dtype() != DType::Int8 || z->numel() != scale->numel()) return std::nullopt;
  }
  return WeightSide{dq->input(0), dq->input(1), dq->input(2), transposed};
}

// A float constant of exactly N elements along the last axis.
Value* bias_of(Value* v, int64_t n) {
  const Tensor* t = last_axis_vector(v, n);
  return t && t->dtype() == DType::Float32 ? v : nullptr;
}

// Mul(x0, c) with c a float constant of K values along the last axis, read only by
// QuantizeLinear nodes: returns c and sets *x0.
Value* smoothing_mul(const Value* x, int64_t k, Value** x0) {
  if (x->is_graph_output()) return nullptr;
  for (const Use& u : x->uses())
    if (!is_op(u.node, "QuantizeLinear")) return nullptr;
  auto mul = channel_factor_mul(producer(x, "Mul"), k);
  if (!mul) return nullptr;
  const DimVector* dims = mul->x->type.dims ? &*mul->x->type.dims : nullptr;
  if (!dims || dims->size() < static_cast<size_t>(constant_value(mul->c)->rank())) return nullptr;
  *x0 = mul->x;
  return mul->c;
}

bool match(Node* node, Match& m) {
  m = Match{};
  m.node = node;
  const bool gemm = is_op(node, "Gemm");
  if (!gemm && !is_op(node, "MatMul")) return false;
  auto a = fake_quant_of(node->input(0));
  if (!a) return false;
  m.a = *a;
  if (gemm) {
    if (node->attr_int("transA", 0) != 0 || node->attr_float("alpha", 1.0f) != 1.0f) return false;
    if (!node->input(0)->type.dims || node->input(0)->type.dims->size() != 2) return false;
  }
  auto w = weight_side(node->input(1), gemm && node->attr_int("transB", 0) != 0);
  if (!w) return false;
  m.w = *w;
  const Tensor* data = constant_value(w->data);
  m.n = data->shape()[w->transposed ? 0 : 1];
  m.channel_scale = smoothing_mul(m.a.x, data->shape()[w->transposed ? 1 : 0], &m.a.x);
  if (gemm) {
    if (Value* c = node->input(2)) {
      if (node->attr_float("beta", 1.0f) != 1.0f || !(m.bias = bias_of(c, m.n))) return false;
      if (constant_value(c)->rank() != 1) return false;
    }
    return true;
  }
  // MatMul + Add(bias), as Linear layers export.
  Value* y = node->output(0);
  Node* add = sole_consumer(y);
  if (is_op(add, "Add") && add->inputs().size() == 2 && y->type.dims && !y->type.dims->empty()) {
    Value* b = bias_of(other_input(add, y), m.n);
    if (b && constant_value(b)->rank() <= static_cast<int64_t>(y->type.dims->size()) && can_replace(add->output(0), y)) {
      m.add = add;
      m.bias = b;
    }
  }
  return true;
}

bool apply(Graph& g, PassContext& ctx, const Match& m) {
  GraphPatch patch = make_patch(g);
  Value* data = m.w.data;
  if (m.w.transposed) data = patch.add_initializer(data->name() + "_kn", transpose_matrix(*constant_value(data)));
  Value* bias = m.bias ? as_1d_vector(patch, m.bias) : nullptr;
  std::vector<Value*> inputs = {m.a.x, m.a.scale, m.a.zero_point, data, m.w.scale, m.w.zero_point};
  if (bias || m.channel_scale) inputs.push_back(bias);
  if (m.channel_scale) {
    inputs.push_back(nullptr);  // residual
    inputs.push_back(as_1d_vector(patch, m.channel_scale));
  }
  Node* fused = patch.add_node("QMatMul", inputs, 1, {}, "octet", m.node->name() + "_int8");
  Value* out = m.add ? m.add->output(0) : m.node->output(0);
  patch.replace_uses(out, fused->output(0));
  patch.remove_node(m.node);
  if (m.add) patch.remove_node(m.add);
  if (!ctx.apply(patch)) return false;
  import_octet_domain(g);
  ctx.count("octet.QMatMul");
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  return sweep_rewrites(g, nullptr, [&](Node* n, const RemovedNodes& removed) {
    Match m;
    if (!match(n, m) || (m.add && removed.contains(m.add)) || !apply(g, ctx, m)) return std::vector<Node*>{};
    std::vector<Node*> gone{m.node};
    if (m.add) gone.push_back(m.add);
    return gone;
  });
}

}  // namespace

Pass fuse_qdq_matmul() { return {"fuse_qdq_matmul", run}; }

}  // namespace octet::passes
