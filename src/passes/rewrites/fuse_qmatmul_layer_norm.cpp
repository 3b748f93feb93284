// octet.QMatMul -> octet.LayerNormQuantize (per-row mode) of its float output -> one
// QMatMul that also normalizes and quantizes each finished row (norm_dynamic_type,
// docs/quantization.md §2).
//
// Why (issue 20): in an encoder every LayerNorm but the first reads the output of a
// residual QMatMul (attention output / FFN down-projection + residual). The
// LayerNormQuantize was a node of its own: one more parallel region (a fork/join of the
// threads, whose wake-up costs most on a busy machine) and one more pass over the [S, E]
// rows, which the QMatMul's epilogue had just written and had in cache. The QMatMul's
// epilogue now makes the LayerNormQuantize's calls on each row it finishes: the same
// numbers (Q, its rows' scale / zero point and the normalized Y are bit-identical; the
// LayerNormQuantize kernel and the epilogue call the same row kernels in the same order).
//
// Matched: a LayerNormQuantize L in per-row mode (dynamic_type; no y_scale /
// y_zero_point) whose X is the only float output of an octet.QMatMul P that writes it
// unquantized (no y_scale / y_zero_point / y_dynamic_type, not already normalizing);
// L's scale / bias / q_scale / q_bias constants (the optimized kernel fixes them at
// session creation). X may have other readers (the next residual): P's output stays.
// The fused node has P's inputs, L's parameters as inputs 12-15, P's attributes plus
// norm_dynamic_type = L's dynamic_type and epsilon = L's epsilon, and outputs (Y, L's
// outputs).
#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/quantized_readers.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

enum : size_t { kYScale = 10, kYZero = 11, kNormFirst = 12 };

bool constant_or_absent(const Value* v) { return !v || constant_value(v); }

// P, the QMatMul whose float output L normalizes, or nullptr.
Node* normalized_qmatmul(const Node* l) {
  if (l->domain() != "octet" || l->op_type() != "LayerNormQuantize" || !l->has_attr("dynamic_type")) return nullptr;
  if (input_or_null(l, 3) || input_or_null(l, 4) || l->inputs().size() > 7 || l->outputs().size() < 3) return nullptr;
  for (size_t i : {size_t{1}, size_t{2}, size_t{5}, size_t{6}})
    if (!constant_or_absent(input_or_null(l, i))) return nullptr;
  if (!input_or_null(l, 1)) return nullptr;
  const Value* x = l->input(0);
  Node* p = x ? x->producer() : nullptr;
  if (!p || p->domain() != "octet" || p->op_type() != "QMatMul" || p->outputs().size() != 1 ||
      p->inputs().size() > kNormFirst || input_or_null(p, kYScale) || input_or_null(p, kYZero) ||
      p->has_attr("y_dynamic_type") || p->has_attr("norm_dynamic_type") || p->has_attr("epsilon"))
    return nullptr;
  if (x->type.dtype != DType::Float32 || read_by_subgraph(x)) return nullptr;
  return p;
}

bool rewrite(Graph& g, PassContext& ctx, Node* p, Node* l) {
  GraphPatch patch = make_patch(g);
  std::vector<Value*> inputs = p->inputs();
  inputs.resize(kNormFirst + 4, nullptr);
  inputs[kNormFirst] = l->input(1);
  inputs[kNormFirst + 1] = input_or_null(l, 2);
  inputs[kNormFirst + 2] = input_or_null(l, 5);
  inputs[kNormFirst + 3] = input_or_null(l, 6);
  while (!inputs.back()) inputs.pop_back();
  std::vector<Attribute> attrs = p->attributes();
  attrs.push_back(Attribute::make_string("norm_dynamic_type", l->attr_string("dynamic_type", "uint8")));
  attrs.push_back(Attribute::make_float("epsilon", l->attr_float("epsilon", 1e-5f)));
  const bool with_y = l->outputs().size() > 3 && l->output(3);
  Node* fused = patch.add_node("QMatMul", inputs, with_y ? 5 : 4, attrs, "octet", p->name() + "_norm");
  patch.replace_uses(p->output(0), fused->output(0));
  for (size_t i = 0; i < (with_y ? 4u : 3u); ++i) patch.replace_uses(l->output(i), fused->output(i + 1));
  patch.remove_node(l);
  patch.remove_node(p);
  if (!ctx.apply(patch)) return false;
  ctx.count("octet.QMatMul + LayerNormQuantize (per row) -> one node");
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  RemovedNodes removed;
  bool changed = false;
  for (Node* l : g.nodes()) {
    if (removed.contains(l)) continue;
    Node* p = normalized_qmatmul(l);
    if (!p || removed.contains(p)) continue;
    if (rewrite(g, ctx, p, l)) {
      removed.add({p, l});
      changed = true;
    }
  }
  return changed;
}

}  // namespace

Pass fuse_qmatmul_layer_norm() { return {"fuse_qmatmul_layer_norm", run}; }

}  // namespace octet::passes
