// tanh-GeLU -> octet.Gelu(approximate="tanh").
//
// GPT-2's NewGELU, 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), exports as
// Pow(x, 3), Mul(0.044715), Add(x), Mul(0.7978845608), Tanh, then the shared tail
// (gelu_tail.h). x^3 may also be written Mul(Mul(x, x), x). The Tanh node anchors the
// match; every intermediate must be read by the pattern alone.
#include <cmath>

#include "passes/pattern.h"
#include "passes/rewrites/gelu_tail.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubeCoefficient = 0.044715;

// The producers of x^3 when `cube` is Pow(x, 3) or x*x*x in either grouping.
bool is_cube_of(Value* cube, Value* x, std::vector<Node*>& nodes) {
  if (!single_use(cube)) return false;
  if (Node* pow = producer(cube, "Pow")) {
    if (pow->input(0) != x || !is_scalar(pow->input(1), 3.0, x)) return false;
    nodes.push_back(pow);
    return true;
  }
  Node* outer = producer(cube, "Mul");
  Value* square = other_input(outer, x);
  Node* inner = producer(square, "Mul");
  if (!inner || !single_use(square) || inner->input(0) != x || inner->input(1) != x) return false;
  nodes.push_back(outer);
  nodes.push_back(inner);
  return true;
}

// Matches sqrt(2/pi) * (x + 0.044715 * x^3) ending in `arg`; sets m.x and m.nodes.
bool match_tanh_argument(Value* arg, GeluMatch& m) {
  if (!single_use(arg)) return false;
  Node* scale = producer(arg, "Mul");
  if (!scale) return false;
  for (int i = 0; i < 2; ++i) {
    Value* sum = scale->input(1 - i);
    if (!is_scalar(scale->input(i), kSqrt2OverPi, sum) || !single_use(sum)) continue;
    Node* add = sum->producer();
    if (!is_add(add)) return false;
    for (int j = 0; j < 2; ++j) {
      Value* x = add->input(j);
      Value* term = add->input(1 - j);
      Node* coef = producer(term, "Mul");
      if (!coef || !single_use(term)) continue;
      for (int k = 0; k < 2; ++k) {
        std::vector<Node*> nodes = {scale, add, coef};
        if (is_scalar(coef->input(k), kCubeCoefficient, x) && is_cube_of(coef->input(1 - k), x, nodes)) {
          m.x = x;
          m.nodes = nodes;
          return true;
        }
      }
    }
  }
  return false;
}

bool run(Graph& g, PassContext& ctx) {
  RemovedNodes removed;
  for (Node* tanh : g.nodes()) {
    if (removed.contains(tanh) || !is_op(tanh, "Tanh")) continue;
    GeluMatch m;
    if (!match_tanh_argument(tanh->input(0), m)) continue;
    if (!m.x->type.known() || !dtype_is_float(m.x->type.dtype)) continue;
    m.nodes.push_back(tanh);
    if (!match_gelu_tail(tanh->output(0), m)) continue;
    if (apply_gelu(g, ctx, m, "tanh")) removed.add(m.nodes);
  }
  return removed.any();
}

}  // namespace

Pass fuse_gelu_tanh() { return {"fuse_gelu_tanh", run}; }

}  // namespace octet::passes
