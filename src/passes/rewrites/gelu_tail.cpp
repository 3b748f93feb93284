#include "passes/rewrites/gelu_tail.h"

#include "ops/infer.h"
#include "passes/pass.h"
#include "passes/pattern.h"

namespace octet::passes {

bool match_gelu_tail(Value* f, GeluMatch& m) {
  Value* x = m.x;
  Node* add = sole_consumer(f);
  if (!is_add(add) || !is_scalar(other_input(add, f), 1.0, f)) return false;
  Value* one_plus = add->output(0);
  Node* mul = sole_consumer(one_plus);
  if (!is_op(mul, "Mul")) return false;
  Value* other = other_input(mul, one_plus);
  if (!other) return false;

  std::vector<Node*> tail = {add, mul};
  if (other == x) {  // Mul(Mul(x, one_plus), 0.5)
    Node* half = sole_consumer(mul->output(0));
    if (!is_op(half, "Mul") || !is_scalar(other_input(half, mul->output(0)), 0.5, x)) return false;
    tail.push_back(half);
    m.out = half->output(0);
  } else if (is_scalar(other, 0.5, one_plus)) {  // Mul(x, Mul(one_plus, 0.5))
    Node* outer = sole_consumer(mul->output(0));
    if (!is_op(outer, "Mul") || other_input(outer, mul->output(0)) != x) return false;
    tail.push_back(outer);
    m.out = outer->output(0);
  } else {  // Mul(Mul(x, 0.5), one_plus)
    Node* half = producer(other, "Mul");
    if (!half || sole_consumer(other) != mul || !is_scalar(other_input(half, x), 0.5, x)) return false;
    tail.push_back(half);
    m.out = mul->output(0);
  }
  m.nodes.insert(m.nodes.end(), tail.begin(), tail.end());
  return can_replace(m.out, x);
}

bool apply_gelu(Graph& g, PassContext& ctx, const GeluMatch& m, const std::string& approximate) {
  GraphPatch patch = make_patch(g);
  Node* gelu = patch.add_node("Gelu", {m.x}, 1, {Attribute::make_string("approximate", approximate)}, "octet",
                              m.nodes.front()->name() + "_gelu");
  patch.replace_uses(m.out, gelu->output(0));
  for (Node* n : m.nodes) patch.remove_node(n);
  if (!ctx.apply(patch)) return false;
  import_octet_domain(g);
  ctx.count("octet.Gelu(" + approximate + ")");
  return true;
}

}  // namespace octet::passes
