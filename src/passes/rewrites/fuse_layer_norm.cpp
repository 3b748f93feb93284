// Decomposed layer norm -> LayerNormalization (ai.onnx, opset 17+).
//
//   mean = ReduceMean(x, trailing axes)      d = Sub(x, mean)
//   var  = ReduceMean(Pow(d, 2) | Mul(d, d)) std = Sqrt(Add(var, eps))
//   y    = Div(d, std) [* gamma] [+ beta]
//
// torch >= 1.13 exports nn.LayerNorm as LayerNormalization already (all three fixtures
// do); this catches older exports and hand-written norms (T5-style code, Keras). Rules:
// both reductions over the same trailing axes with keepdims; eps a scalar constant; d
// read by the square and the Div only, every other intermediate by the pattern only;
// gamma/beta any tensor of x's type shaped like the normalized axes (is_norm_param).
// Below opset 17 there is no LayerNormalization, and the pattern is left alone.
#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

struct Match {
  Value* x = nullptr;
  int64_t axis = 0;  // first normalized axis
  double epsilon = 0;
  Value* gamma = nullptr;
  Value* beta = nullptr;
  Value* out = nullptr;
  std::vector<Node*> nodes;
};

// The square of `d` (Pow(d, 2) or Mul(d, d)) and the Div(d, .) reading d, when those are
// its only readers.
bool split_d_readers(Value* d, Node*& square, Node*& div) {
  if (d->is_graph_output()) return false;
  square = div = nullptr;
  for (const Use& u : d->uses()) {
    Node* n = u.node;
    if (u.implicit) return false;
    if (is_op(n, "Pow") && u.index == 0 && is_scalar(n->input(1), 2.0, d)) square = n;
    else if (is_op(n, "Mul") && n->input(0) == d && n->input(1) == d) square = n;
    else if (is_op(n, "Div") && u.index == 0) div = n;
    else return false;
  }
  const size_t expected = square && is_op(square, "Mul") ? 3 : 2;
  return square && div && d->uses().size() == expected;
}

bool match(Node* mean_node, Match& m) {
  auto k = trailing_reduce_axis(mean_node);
  Value* x = mean_node->input(0);
  if (!k || !x->type.known() || !dtype_is_float(x->type.dtype)) return false;
  Node* sub = sole_consumer(mean_node->output(0));
  if (!is_op(sub, "Sub") || sub->input(0) != x || sub->input(1) != mean_node->output(0)) return false;
  Value* d = sub->output(0);
  Node *square = nullptr, *div = nullptr;
  if (!split_d_readers(d, square, div)) return false;
  Node* var_node = sole_consumer(square->output(0));
  if (!is_op(var_node, "ReduceMean") || trailing_reduce_axis(var_node) != k) return false;
  Node* add_eps = sole_consumer(var_node->output(0));
  if (!is_add(add_eps)) return false;
  Value* eps = other_input(add_eps, var_node->output(0));
  auto eps_value = scalar_constant(eps);
  if (!eps_value || *eps_value < 0 || !is_scalar(eps, *eps_value, var_node->output(0))) return false;
  Node* sqrt = sole_consumer(add_eps->output(0));
  if (!is_op(sqrt, "Sqrt") || sole_consumer(sqrt->output(0)) != div || div->input(1) != sqrt->output(0))
    return false;

  m = Match{x, *k, *eps_value, nullptr, nullptr, div->output(0),
            {mean_node, sub, square, var_node, add_eps, sqrt, div}};
  if (Node* mul = sole_consumer(m.out); is_op(mul, "Mul") && is_norm_param(other_input(mul, m.out), x, *k)) {
    m.gamma = other_input(mul, m.out);
    m.out = mul->output(0);
    m.nodes.push_back(mul);
  }
  if (Node* add = sole_consumer(m.out); is_op(add, "Add") && is_norm_param(other_input(add, m.out), x, *k)) {
    m.beta = other_input(add, m.out);
    m.out = add->output(0);
    m.nodes.push_back(add);
  }
  return can_replace(m.out, x);
}

bool apply(Graph& g, PassContext& ctx, const Match& m) {
  GraphPatch patch = make_patch(g);
  Value* gamma = m.gamma;
  if (!gamma) {  // LayerNormalization needs a Scale: ones over the normalized dims
    std::vector<int64_t> shape;
    for (size_t i = static_cast<size_t>(m.axis); i < m.x->type.dims->size(); ++i) {
      auto c = (*m.x->type.dims)[i].constant();
      if (!c) return false;
      shape.push_back(*c);
    }
    gamma = patch.add_initializer(m.nodes.front()->name() + "_scale", filled(m.x->type.dtype, shape, 1.0));
  }
  const int64_t rank = m.x->type.rank();
  std::vector<Value*> inputs = {m.x, gamma};
  if (m.beta) inputs.push_back(m.beta);
  Node* ln = patch.add_node("LayerNormalization", inputs, 1,
                            {Attribute::make_int("axis", m.axis - rank),
                             Attribute::make_float("epsilon", static_cast<float>(m.epsilon))},
                            "", m.nodes.front()->name() + "_layernorm");
  patch.replace_uses(m.out, ln->output(0));
  for (Node* n : m.nodes) patch.remove_node(n);
  if (!ctx.apply(patch)) return false;
  ctx.count("LayerNormalization");
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  if (!onnx_opset_at_least(g, 17)) return false;
  return sweep_rewrites(g, "ReduceMean", [&](Node* n, const RemovedNodes&) {
    Match m;
    return match(n, m) && apply(g, ctx, m) ? m.nodes : std::vector<Node*>{};
  });
}

}  // namespace

Pass fuse_layer_norm() { return {"fuse_layer_norm", run}; }

}  // namespace octet::passes
