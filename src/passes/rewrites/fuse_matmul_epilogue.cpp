// octet.MatMulBias -> Gelu                 -> octet.MatMulBias activation="gelu"|"gelu_tanh"
// octet.MatMulBias -> Add(., residual)     -> octet.MatMulBias(A, B, bias, residual)
// The same for octet.QMatMul (the int8 matmul, docs/quantization.md), whose residual is
// its input 7: both ops define one epilogue, bias then activation then residual.
// com.microsoft.MatMulNBits -> Add(., residual) -> octet.MatMulNBits(..., residual): the
// residual as input 6 (no activation: its kernel has none). Decoders add their skip
// connection after the attention output and the MLP down projections: at decode two Add
// kernel calls per layer. Left alone where A is also read by another MatMulNBits, a
// sibling merge_sibling_matmuls (later) would merge it with.
// ai.onnx MatMul(A, W) -> Add(., residual) -> octet.MatMulBias(A, W, <no bias>, residual):
// the same skip connections in a float decoder whose Linear layers have no bias (Llama
// family), for W a constant 2-D weight (a Linear layer; the fp32 decode GEMV adds the
// residual to its panels, dnnl_matmul_gemv.cpp; prefill gets oneDNN's add post-op). Left
// alone where another such MatMul reads A (merge_sibling_matmuls' candidate).
//
// Why: the FFN of every BERT/GPT-2/ViT block is Linear -> GeLU, and each block's output
// projection is Linear -> Add(skip connection). Folded into the MatMulBias, the optimized
// kernel applies both while the GEMM's output tile is still in cache (oneDNN post-ops)
// instead of streaming the whole [tokens, hidden] tensor through memory twice more.
//
// Rules: the MatMulBias output is read by the Gelu or Add alone (and is not a graph
// output), so nothing else sees the value before the epilogue. The epilogue order is
// fixed (bias, activation, residual), so a Gelu folds only into a MatMulBias with neither
// activation nor residual, and a residual only into one without a residual. The residual
// has the output's type and exactly its dims (structurally equal, known rank): the Add
// then never broadcasts, so the fused op keeps the Add's output shape by construction.
// Gelu is octet.Gelu (fuse_gelu_erf/tanh write it) or ai.onnx Gelu (opset 20).
#include <algorithm>

#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

// ai.onnx MatMul(A, W) with W a constant 2-D float weight of A's type: a bias-free Linear layer.
bool is_linear_matmul(const Node* n) {
  if (!is_op(n, "MatMul") || n->inputs().size() != 2 || !n->input(0) || !n->input(0)->type.known()) return false;
  const Tensor* w = constant_value(n->input(1));
  return w && w->rank() == 2 && dtype_is_float(w->dtype()) && w->dtype() == n->input(0)->type.dtype;
}

// The input slot of the residual for the fused matmuls that have an epilogue; -1 otherwise.
int residual_slot(const Node* n) {
  if (n && n->op_type() == "MatMulNBits" && (n->domain() == "com.microsoft" || n->domain() == "octet")) return 6;
  if (is_linear_matmul(n)) return 3;  // becomes octet.MatMulBias without a bias
  if (!n || n->domain() != "octet") return -1;
  if (n->op_type() == "MatMulBias") return 3;
  if (n->op_type() == "QMatMul") return 7;
  return -1;
}

bool is_gelu(const Node* n) {
  return n && n->op_type() == "Gelu" && (n->domain() == "octet" || n->domain().empty());
}

bool is_nbits(const Node* n) { return n->op_type() == "MatMulNBits"; }
bool is_com_nbits(const Node* n) { return n->domain() == "com.microsoft" && is_nbits(n); }

// True when another reader of n's A is of the same kind (`same_kind`): merge_sibling_matmuls
// (later) makes such siblings one product, so their epilogues stay apart until then.
bool has_sibling(const Node* n, bool (*same_kind)(const Node*)) {
  const Value* a = n->input(0);
  if (!a) return false;
  for (const Use& u : a->uses())
    if (u.node != n && same_kind(u.node)) return true;
  return false;
}

struct Match {
  Node* mmb = nullptr;
  Node* consumer = nullptr;      // the Gelu or the Add
  std::string activation;        // set for a Gelu
  Value* residual = nullptr;     // set for an Add
};

bool match(Node* mmb, Match& m) {
  // More outputs (a per-row Y, QMatMul's LayerNorm epilogue) are computed from Y: a Gelu
  // or Add folded in would change them.
  if (mmb->outputs().size() != 1) return false;
  Value* y = mmb->output(0);
  Node* next = sole_consumer(y);
  if (!next || !y->type.known()) return false;
  const std::string act = mmb->attr_string("activation", "");
  const size_t slot = static_cast<size_t>(residual_slot(mmb));
  const bool has_residual = mmb->inputs().size() > slot && mmb->input(slot) != nullptr;
  if (is_nbits(mmb) && (has_sibling(mmb, is_com_nbits) || mmb->inputs().size() > slot)) return false;
  const bool plain = is_linear_matmul(mmb);
  if (plain && has_sibling(mmb, is_linear_matmul)) return false;
  if (is_gelu(next)) {
    if (is_nbits(mmb) || plain) return false;
    if (!act.empty() || has_residual) return false;
    const std::string approx = next->attr_string("approximate", "none");
    if (approx != "none" && approx != "tanh") return false;
    if (!can_replace(next->output(0), y)) return false;
    m = Match{mmb, next, approx == "tanh" ? "gelu_tanh" : "gelu", nullptr};
    return true;
  }
  if (is_op(next, "Add") && next->inputs().size() == 2 && !has_residual) {
    Value* r = other_input(next, y);
    if (!r || r == y || r->type.dtype != y->type.dtype) return false;
    if (!r->type.dims || !y->type.dims || *r->type.dims != *y->type.dims) return false;
    if (!can_replace(next->output(0), y)) return false;
    m = Match{mmb, next, act, r};
    return true;
  }
  return false;
}

bool apply(Graph& g, PassContext& ctx, const Match& m) {
  GraphPatch patch = make_patch(g);
  const size_t slot = static_cast<size_t>(residual_slot(m.mmb));
  const bool plain = is_linear_matmul(m.mmb);
  std::vector<Value*> inputs = m.mmb->inputs();
  if (m.residual) {
    inputs.resize(std::max(inputs.size(), slot + 1), nullptr);
    inputs[slot] = m.residual;
  }
  std::vector<Attribute> attrs;
  for (const Attribute& a : m.mmb->attributes())
    if (a.name != "activation") attrs.push_back(a);
  if (!m.activation.empty()) attrs.push_back(Attribute::make_string("activation", m.activation));
  const std::string op_type = plain ? "MatMulBias" : m.mmb->op_type();  // (the patch frees m.mmb)
  Node* fused = patch.add_node(op_type, inputs, 1, std::move(attrs), "octet",
                               m.mmb->name() + (m.residual ? "_residual" : "_gelu"));
  patch.replace_uses(m.consumer->output(0), fused->output(0));
  patch.remove_node(m.mmb);
  patch.remove_node(m.consumer);
  if (!ctx.apply(patch)) return false;
  if (plain) import_octet_domain(g);
  const std::string op = "octet." + op_type;
  ctx.count(m.residual ? op + "+residual" : op + "+" + m.activation);
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  return sweep_rewrites(g, nullptr, [&](Node* n, const RemovedNodes& removed) {
    Match m;
    if (residual_slot(n) < 0 || !match(n, m) || removed.contains(m.consumer) || !apply(g, ctx, m))
      return std::vector<Node*>{};
    return std::vector<Node*>{m.mmb, m.consumer};
  });
}

}  // namespace

Pass fuse_matmul_epilogue() { return {"fuse_matmul_epilogue", run}; }

}  // namespace octet::passes
