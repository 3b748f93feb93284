// Erf-GeLU -> octet.Gelu(approximate="none").
//
// Exporters write GeLU(x) = 0.5 * x * (1 + erf(x / sqrt(2))) as five elementwise nodes
// (BERT and ViT fixtures): the argument of erf is Div(x, 1.4142135) or Mul(x, 0.70710678),
// the 0.5 and 1 come as shared or per-node constants, and the 0.5 multiplies before or
// after (gelu_tail.h). The Erf node anchors the match; every intermediate must be read by
// the pattern alone, so a value used elsewhere is never swallowed.
#include <cmath>

#include "passes/pattern.h"
#include "passes/rewrites/gelu_tail.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

// x when `scaled` is x / sqrt(2) or x * (1 / sqrt(2)), read by the Erf alone.
Value* erf_argument(Value* scaled, Node*& scale_node) {
  if (!single_use(scaled)) return nullptr;
  if (Node* div = producer(scaled, "Div")) {
    scale_node = div;
    return is_scalar(div->input(1), std::sqrt(2.0), div->input(0)) ? div->input(0) : nullptr;
  }
  if (Node* mul = producer(scaled, "Mul")) {
    scale_node = mul;
    for (int i = 0; i < 2; ++i)
      if (is_scalar(mul->input(i), std::sqrt(0.5), mul->input(1 - i))) return mul->input(1 - i);
  }
  return nullptr;
}

bool run(Graph& g, PassContext& ctx) {
  RemovedNodes removed;
  for (Node* erf : g.nodes()) {
    if (removed.contains(erf) || !is_op(erf, "Erf")) continue;
    GeluMatch m;
    Node* scale = nullptr;
    m.x = erf_argument(erf->input(0), scale);
    if (!m.x || !m.x->type.known() || !dtype_is_float(m.x->type.dtype)) continue;
    m.nodes = {scale, erf};
    if (!match_gelu_tail(erf->output(0), m)) continue;
    if (apply_gelu(g, ctx, m, "none")) removed.add(m.nodes);
  }
  return removed.any();
}

}  // namespace

Pass fuse_gelu_erf() { return {"fuse_gelu_erf", run}; }

}  // namespace octet::passes
