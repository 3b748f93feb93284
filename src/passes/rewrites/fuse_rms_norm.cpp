// Decomposed RMS norm -> RMSNormalization.
//
//   ms = ReduceMean(Pow(x, 2) | Mul(x, x), trailing axes)   s = Sqrt(Add(ms, eps))
//   y  = Div(x, s) | Mul(x, Reciprocal(s)) | Mul(x, Div(1, s))   [* gamma]
//
// (LLaMA/Qwen/T5 RMSNorm; torch exports rsqrt as Reciprocal(Sqrt) or Div(1, Sqrt)). The
// fused op is ai.onnx RMSNormalization from opset 23 and octet.RMSNormalization (the
// same op) before, so any model can carry it. Rules as for the LayerNorm fusion; a
// LayerNorm's inner x - mean also has this shape, which is why fuse_layer_norm runs first.
#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

struct Match {
  Value* x = nullptr;
  int64_t axis = 0;
  double epsilon = 0;
  Value* gamma = nullptr;
  Value* out = nullptr;
  std::vector<Node*> nodes;
};

// x when `sq` is Pow(x, 2) or Mul(x, x), read by the reduction alone.
Value* squared_input(Value* sq, Node*& square) {
  if (!single_use(sq)) return nullptr;
  if ((square = producer(sq, "Pow")) && is_scalar(square->input(1), 2.0, square->input(0))) return square->input(0);
  if ((square = producer(sq, "Mul")) && square->input(0) == square->input(1)) return square->input(0);
  return nullptr;
}

// x / s in one of the three spellings; the normalized value, or nullptr.
Value* divide_by(Value* x, Value* s, std::vector<Node*>& nodes) {
  Node* reader = sole_consumer(s);
  if (is_op(reader, "Div") && reader->input(0) == x && reader->input(1) == s) {
    nodes.push_back(reader);
    return reader->output(0);
  }
  const bool reciprocal = is_op(reader, "Reciprocal") ||
                          (is_op(reader, "Div") && reader->input(1) == s && is_scalar(reader->input(0), 1.0, s));
  if (!reciprocal) return nullptr;
  Node* mul = sole_consumer(reader->output(0));
  if (!is_op(mul, "Mul") || other_input(mul, reader->output(0)) != x) return nullptr;
  nodes.push_back(reader);
  nodes.push_back(mul);
  return mul->output(0);
}

bool match(Node* reduce, Match& m) {
  Node* square = nullptr;
  Value* x = squared_input(reduce->input(0), square);
  auto k = trailing_reduce_axis(reduce);
  if (!x || !k || !x->type.known() || !dtype_is_float(x->type.dtype)) return false;
  Node* add_eps = sole_consumer(reduce->output(0));
  if (!is_add(add_eps)) return false;
  Value* eps = other_input(add_eps, reduce->output(0));
  auto eps_value = scalar_constant(eps);
  if (!eps_value || *eps_value < 0 || !is_scalar(eps, *eps_value, reduce->output(0))) return false;
  Node* sqrt = sole_consumer(add_eps->output(0));
  if (!is_op(sqrt, "Sqrt")) return false;
  m = Match{x, *k, *eps_value, nullptr, nullptr, {square, reduce, add_eps, sqrt}};
  m.out = divide_by(x, sqrt->output(0), m.nodes);
  if (!m.out) return false;
  if (Node* mul = sole_consumer(m.out); is_op(mul, "Mul") && is_norm_param(other_input(mul, m.out), x, *k)) {
    m.gamma = other_input(mul, m.out);
    m.out = mul->output(0);
    m.nodes.push_back(mul);
  }
  return can_replace(m.out, x);
}

bool apply(Graph& g, PassContext& ctx, const Match& m) {
  const bool onnx_op = onnx_opset_at_least(g, 23);
  GraphPatch patch = make_patch(g);
  Value* gamma = m.gamma;
  if (!gamma) {  // RMSNormalization needs a scale: ones over the normalized dims
    std::vector<int64_t> shape;
    for (size_t i = static_cast<size_t>(m.axis); i < m.x->type.dims->size(); ++i) {
      auto c = (*m.x->type.dims)[i].constant();
      if (!c) return false;
      shape.push_back(*c);
    }
    gamma = patch.add_initializer(m.nodes.front()->name() + "_scale", filled(m.x->type.dtype, shape, 1.0));
  }
  Node* norm = patch.add_node("RMSNormalization", {m.x, gamma}, 1,
                              {Attribute::make_int("axis", m.axis - m.x->type.rank()),
                               Attribute::make_float("epsilon", static_cast<float>(m.epsilon))},
                              onnx_op ? "" : "octet", m.nodes.front()->name() + "_rmsnorm");
  patch.replace_uses(m.out, norm->output(0));
  for (Node* n : m.nodes) patch.remove_node(n);
  if (!ctx.apply(patch)) return false;
  if (!onnx_op) import_octet_domain(g);
  ctx.count(onnx_op ? "RMSNormalization" : "octet.RMSNormalization");
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  return sweep_rewrites(g, "ReduceMean", [&](Node* n, const RemovedNodes&) {
    Match m;
    return match(n, m) && apply(g, ctx, m) ? m.nodes : std::vector<Node*>{};
  });
}

}  // namespace

Pass fuse_rms_norm() { return {"fuse_rms_norm", run}; }

}  // namespace octet::passes
