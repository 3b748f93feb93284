// Removes ops that return their input unchanged: Identity, Dropout at inference, and
// Cast/CastLike to the type the input already has. Their consumers read the input
// directly.
//
// Kept on purpose:
// - Dropout whose mask output is read, or whose training_mode (opset 12+) is not a
//   constant false: the first needs the mask, the second may drop at random;
// - a no-op whose output is a graph output while its input is a graph input, an
//   initializer or another graph output: both names are part of the interface, and one
//   value cannot carry two (Identity exists in ONNX for exactly this).
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"
#include "ops/infer.h"

namespace octet::passes {
namespace {

bool dropout_is_identity(const Node& n) {
  if (const Value* mask = n.output(1); mask && (!mask->uses().empty() || mask->is_graph_output())) return false;
  if (n.opset() != 0 && n.opset() < 12) return true;  // no training switch before opset 12
  const Value* training = n.input(2);
  if (!training) return true;
  const Tensor* t = constant_value(training);
  return t && t->numel() == 1 && t->to_int64_vector()[0] == 0;
}

// "Identity", "Dropout", "Cast", "CastLike" when `n` returns its input 0 unchanged.
const char* noop_kind(const Node& n) {
  const Value* x = n.input(0);
  if (!n.domain().empty() || !x || !n.output(0)) return nullptr;
  const std::string& op = n.op_type();
  if (op == "Identity") return "Identity";
  if (op == "Dropout") return dropout_is_identity(n) ? "Dropout" : nullptr;
  if (!x->type.known()) return nullptr;
  if (op == "Cast") {
    const Attribute* to = n.find_attr("to");
    return to && to->kind == Attribute::Kind::Int && to->i == dtype_to_onnx(x->type.dtype) ? "Cast" : nullptr;
  }
  if (op == "CastLike") {
    const Value* like = n.input(1);
    return like && like->type.dtype == x->type.dtype ? "CastLike" : nullptr;
  }
  return nullptr;
}

bool run(Graph& g, PassContext& ctx) {
  bool changed = false;
  // One patch per node: chains (Identity of Identity) then resolve one link at a time.
  for (Node* n : g.nodes()) {
    const char* kind = noop_kind(*n);
    if (!kind) continue;
    Value* x = n->input(0);
    Value* y = n->output(0);
    if (y->is_graph_output() && (x->is_graph_input() || x->is_initializer() || x->is_graph_output())) continue;
    if (!can_replace(y, x)) continue;
    GraphPatch patch = make_patch(g);
    patch.replace_uses(y, x);
    patch.remove_node(n);
    if (ctx.apply(patch)) {
      ctx.count(kind);
      changed = true;
    }
  }
  return changed;
}

}  // namespace

Pass eliminate_noops() { return {"eliminate_noops", run}; }

}  // namespace octet::passes
