// Casts that change nothing: Cast(x, to=type of x), and Cast(Cast(x: A -> B) -> A) where
// B holds every value of A exactly (float16/bfloat16 -> float32, int8 -> int32, ...), so
// the pair returns x bit for bit. A narrowing pair (float32 -> float16 -> float32) rounds
// and is kept: removing it would change the result. Casts nothing reads any more are
// dropped.
#include "legalize/rewrites.h"
#include "passes/pattern.h"

namespace octet::legalize {

namespace {

bool is_cast(const Node* n) { return n && n->domain().empty() && n->op_type() == "Cast"; }

// B represents every value of A exactly.
bool widens_exactly(DType a, DType b) {
  if (a == b) return true;
  if (dtype_is_float(a) && dtype_is_float(b)) {
    if (b == DType::Float64) return a == DType::Float32 || a == DType::Float16 || a == DType::BFloat16;
    if (b == DType::Float32) return a == DType::Float16 || a == DType::BFloat16;
    return false;
  }
  if (dtype_is_integer(a) && dtype_is_integer(b)) {
    const bool sa = dtype_is_signed(a), sb = dtype_is_signed(b);
    if (sa && !sb) return false;
    return dtype_bits(b) > dtype_bits(a) || (sa == sb && dtype_bits(b) == dtype_bits(a));
  }
  if (dtype_is_integer(a) && dtype_is_float(b))  // integers within the float's mantissa
    return dtype_bits(a) <= 8 || (b != DType::Float16 && b != DType::BFloat16 && dtype_bits(a) <= 16);
  return false;
}

}  // namespace

void cancel_casts(Graph& graph, RewriteLog& log) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (Node* n : graph.nodes()) {
      if (!is_cast(n) || !n->input(0) || !n->output(0)) continue;
      Value* out = n->output(0);
      Value* in = n->input(0);
      Value* same = nullptr;
      if (in->type.known() && in->type.dtype == out->type.dtype) same = in;
      else if (Node* first = in->producer(); is_cast(first) && first->input(0)) {
        Value* x = first->input(0);
        if (x->type.known() && x->type.dtype == out->type.dtype && widens_exactly(x->type.dtype, in->type.dtype))
          same = x;
      }
      if (!same || !passes::can_replace(out, same)) continue;
      if (out->is_graph_output() && (same->is_graph_input() || same->is_initializer() || same->is_graph_output()))
        continue;  // the output must keep its own name and producer
      // Said before apply(), which frees the Cast and its output.
      const std::string what = std::string(same == in ? "same-type Cast '" : "round-trip Cast pair ending at '") +
                               out->name() + "'";
      GraphPatch patch(graph);
      patch.replace_uses(out, same);
      patch.remove_node(n);
      patch.apply();
      log.note("removed " + what);
      changed = true;
      break;  // the node list changed
    }
  }
  // Casts left without readers (the first of a removed pair).
  changed = true;
  while (changed) {
    changed = false;
    for (Node* n : graph.nodes())
      if (is_cast(n) && n->output(0) && n->output(0)->uses().empty() && !n->output(0)->is_graph_output()) {
        GraphPatch patch(graph);
        patch.remove_node(n);
        patch.apply();
        changed = true;
        break;
      }
  }
}

}  // namespace octet::legalize
