// MatMul(A, DequantizeLinear(W_q, scales, zero_points, axis 0, block_size B))
//   -> com.microsoft.MatMulNBits(A, W packed, scales, zero_points)
//
// Why: the standard ONNX form of a weight-only quantized linear layer (opset 21's blocked
// DequantizeLinear, what `octet quantize --weights int4|int8` writes for the octet and
// tensorrt targets) run literally dequantizes the whole weight to float on every run, so a
// decode step reads 4 bytes per weight plus the 0.5 or 1 it stored. MatMulNBits runs the
// same product with the weights dequantized in registers (src/kernels/cpu/matmul_nbits.cpp).
//
// Exactness: both compute sum_k a[k] * ((q[k, n] - z) * s); the values are repacked, never
// re-rounded (quant::from_blocked_dq: signed codes move by 2^(bits-1) with their zero
// points). The products are summed in another order, as any two matmul kernels do.
//
// Rules: MatMul's B is a DequantizeLinear on axis 0 (of 2) with block_size B, a power of 2
// >= 16 (MatMulNBits' requirement); W_q a constant int4/uint4/int8/uint8 [K, N]; scales a
// float32 constant [ceil(K / B), N]; zero points absent or a constant of W_q's type and
// the scales' shape; A float32. The DequantizeLinear stays for other readers; when the
// MatMul was its only one, it goes in the same patch with the constants only it read, so
// the weights are never held in both forms (SmolLM2's int8 file, 211 such layers, held
// both until dead-code elimination ran: ~466 MB while optimizing, 290-350 now).
#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"
#include "quant/block_quant.h"

namespace octet::passes {
namespace {

struct Match {
  Node* matmul = nullptr;
  Node* dq = nullptr;
  quant::BlockQuantized weights;
};

bool match(Node* n, Match& m) {
  if (!is_op(n, "MatMul") || !n->input(0) || n->input(0)->type.dtype != DType::Float32) return false;
  Node* dq = producer(n->input(1), "DequantizeLinear");
  if (!dq) return false;
  const int64_t block = dq->attr_int("block_size", 0);
  if (block < 16 || (block & (block - 1)) != 0) return false;
  if (dq->has_attr("output_dtype") && dq->attr_int("output_dtype", 0) != 0 && dq->attr_int("output_dtype", 0) != 1)
    return false;
  const Tensor* q = constant_value(dq->input(0));
  const Tensor* s = constant_value(dq->input(1));
  const Tensor* z = dq->input(2) ? constant_value(dq->input(2)) : nullptr;
  if (!q || !s || (dq->input(2) && !z) || q->rank() != 2) return false;
  int64_t axis = dq->attr_int("axis", 1);
  if (axis < 0) axis += 2;
  if (axis != 0) return false;
  auto w = quant::from_blocked_dq(*q, *s, z, block);
  if (!w) return false;
  m.matmul = n;
  m.dq = dq;
  m.weights = std::move(*w);
  return !read_by_subgraph(n->output(0));
}

// `v` is read by `node` alone (once), and is no graph input or output.
bool only_reader(const Value* v, const Node* node) {
  return !v->is_graph_input() && !v->is_graph_output() && v->uses().size() == 1 && !v->uses()[0].implicit &&
         v->uses()[0].node == node;
}

bool apply(Graph& g, PassContext& ctx, const Match& m) {
  const quant::NbitsTensors t = quant::to_matmul_nbits(m.weights);
  GraphPatch patch = make_patch(g);
  const std::string name = m.matmul->name();
  std::vector<Value*> ins = {m.matmul->input(0), patch.add_initializer(name + "_nbits_b", t.b),
                             patch.add_initializer(name + "_nbits_scales", t.scales)};
  if (t.zero_points) ins.push_back(patch.add_initializer(name + "_nbits_zero_points", *t.zero_points));
  Node* nb = patch.add_node("MatMulNBits", ins, 1,
                            {Attribute::make_int("K", m.weights.K), Attribute::make_int("N", m.weights.N),
                             Attribute::make_int("bits", m.weights.bits),
                             Attribute::make_int("block_size", m.weights.block)},
                            "com.microsoft", name + "_nbits");
  patch.replace_uses(m.matmul->output(0), nb->output(0));
  patch.remove_node(m.matmul);
  if (only_reader(m.dq->output(0), m.matmul)) {
    patch.remove_node(m.dq);
    for (Value* v : m.dq->inputs())
      if (v && v->is_initializer() && only_reader(v, m.dq)) patch.remove_initializer(v);
  }
  g.opset_imports.emplace("com.microsoft", 1);
  if (!ctx.apply(patch)) return false;
  ctx.count("MatMulNBits");
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  return sweep_rewrites(g, nullptr, [&](Node* n, const RemovedNodes&) {
    Match m;
    return match(n, m) && apply(g, ctx, m) ? std::vector<Node*>{m.matmul, m.dq} : std::vector<Node*>{};
  });
}

}  // namespace

Pass fuse_blocked_dq_matmul() { return {"fuse_blocked_dq_matmul", run}; }

}  // namespace octet::passes
