// SiLU(gate) * up -> octet.SwiGLU.
//
//   s = Sigmoid(g)   a = Mul(g, s)   y = Mul(a, u)        (either operand order of each Mul)
//
// Llama-family MLPs (SwiGLU: Sigmoid, Mul, Mul as torch exports SiLU * up). Two forms:
//   - g and u are the two equal halves of one Split of the last axis, read by nothing
//     else: octet.SwiGLU(X) on the Split's input, the Split gone. That is the form
//     merge_sibling_matmuls leaves (gate and up projections of one input merged into one
//     product and a Split), so this pass runs after it.
//   - else, g and u of the same shape: octet.SwiGLU(g, u).
// Why: at decode the four nodes are four kernel calls and passes over a few KB each (the
// Split a copy); SmolLM2's step has 30 such MLPs. octet.SwiGLU rounds as the nodes it
// replaces (ops/octet_ops.cpp), and the CPU kernel computes the same sigmoid, so the fused
// graph is bit for bit the unfused one.
// Left alone: g read by anything but the Sigmoid and the first Mul; s or a read twice or a
// graph output; a Split on another axis, in unequal or more than two parts, or whose u has
// other readers (the two-input form then, where shapes allow); shapes not known equal.
#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

struct Match {
  Value* g = nullptr;
  Value* u = nullptr;
  Node* split = nullptr;  // the one-input form's Split, or nullptr
  Value* out = nullptr;
  std::vector<Node*> nodes;
};

bool same_known_shape(const Value* a, const Value* b) {
  if (!a->type.known() || !b->type.known() || a->type.dtype != b->type.dtype || !a->type.dims || !b->type.dims)
    return false;
  return *a->type.dims == *b->type.dims;
}

// True when `split` cuts its input's last axis into two equal halves (outputs 0 and 1).
bool halves_last_axis(const Node* split) {
  if (split->outputs().size() != 2 || !split->output(0) || !split->output(1)) return false;
  const Value* x = split->input(0);
  const std::optional<int64_t> n = x && x->type.dims && !x->type.dims->empty() ? x->type.dims->back().constant()
                                                                                 : std::nullopt;
  const std::vector<int64_t> sizes = last_axis_split_sizes(split, n);
  return sizes.size() == 2 && sizes[0] == sizes[1];
}

bool match(Node* sigmoid, Match& m) {
  Value* g = sigmoid->input(0);
  if (!g || !g->type.known() || !dtype_is_float(g->type.dtype) || g->is_graph_output() || read_by_subgraph(g))
    return false;
  Node* gate = sole_consumer(sigmoid->output(0));
  if (!is_op(gate, "Mul") || other_input(gate, sigmoid->output(0)) != g) return false;
  if (g->uses().size() != 2) return false;  // the Sigmoid and the first Mul only
  Node* mul = sole_consumer(gate->output(0));
  if (!is_op(mul, "Mul")) return false;
  Value* u = other_input(mul, gate->output(0));
  if (!u || u == g || !u->type.known() || u->type.dtype != g->type.dtype) return false;
  m = Match{g, u, nullptr, mul->output(0), {sigmoid, gate, mul}};
  Node* split = producer(g, "Split");
  if (split && split == producer(u, "Split") && split->output(0) == g && split->output(1) == u &&
      halves_last_axis(split) && sole_consumer(u) == mul && !read_by_subgraph(u)) {
    m.split = split;
    m.nodes.push_back(split);
    return can_replace(m.out, split->input(0));
  }
  return same_known_shape(g, u) && can_replace(m.out, g);
}

bool apply(Graph& g, PassContext& ctx, const Match& m) {
  GraphPatch patch = make_patch(g);
  std::vector<Value*> ins = m.split ? std::vector<Value*>{m.split->input(0)} : std::vector<Value*>{m.g, m.u};
  Node* fused = patch.add_node("SwiGLU", ins, 1, {}, "octet", m.nodes.front()->name() + "_swiglu");
  patch.replace_uses(m.out, fused->output(0));
  for (Node* n : m.nodes) patch.remove_node(n);
  if (!ctx.apply(patch)) return false;
  import_octet_domain(g);
  ctx.count(m.split ? "octet.SwiGLU (merged gate/up)" : "octet.SwiGLU");
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  return sweep_rewrites(g, "Sigmoid", [&](Node* n, const RemovedNodes&) {
    Match m;
    return match(n, m) && apply(g, ctx, m) ? m.nodes : std::vector<Node*>{};
  });
}

}  // namespace

Pass fuse_swiglu() { return {"fuse_swiglu", run}; }

}  // namespace octet::passes
