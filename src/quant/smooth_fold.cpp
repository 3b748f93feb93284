#include "quant/smooth_fold.h"

#include <set>

#include "ops/infer.h"

namespace octet::quant {
namespace {

Node* node_named(const Graph& graph, const std::string& name) {
  for (Node* n : graph.nodes())
    if (n->name() == name) return n;
  fail("smoothing: node '", name, "' is not in the graph");
}

bool float_constant(const Value* v) {
  return v && v->is_initializer() && !v->is_graph_input() && v->constant() && v->constant()->dtype() == DType::Float32;
}

// A float constant whose values vary along the last axis only, with K of them, and that
// broadcasts against X without changing X's shape: [K], [1, K], [1, 1, K], ...
bool per_channel_vector(const Value* c, int64_t k, const Value* x) {
  if (!float_constant(c)) return false;
  const Tensor& t = *c->constant();
  if (t.rank() == 0 || t.shape().back() != k || t.numel() != k) return false;
  return !x->type.dims || t.rank() <= static_cast<int64_t>(x->type.dims->size());
}

// `t` with element (.., j) of its last axis (axis = -1) or of row j (axis = 0 of a 2-D
// tensor) multiplied by f[j].
Tensor scaled(const Tensor& t, const std::vector<float>& f, bool along_rows) {
  Tensor out = t.deep_copy();
  float* d = out.mutable_data<float>();
  const int64_t n = out.numel();
  const int64_t k = static_cast<int64_t>(f.size());
  if (along_rows) {
    const int64_t cols = n / k;
    for (int64_t j = 0; j < k; ++j)
      for (int64_t c = 0; c < cols; ++c) d[j * cols + c] *= f[static_cast<size_t>(j)];
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] *= f[static_cast<size_t>(i % k)];
  }
  return out;
}

// One parameter of the producer chain that absorbs 1/s.
struct ParamEdit {
  Node* node;
  size_t slot;
  bool along_rows;  // scale rows (Gemm transB weight) rather than the last axis
};

struct Chain {
  std::vector<Node*> nodes;  // from X's producer down to where the chain ends
  std::vector<ParamEdit> edits;
  bool cloneable = false;    // elementwise or layout ops only: cheap to copy for the group's path
  std::string what;          // for the report
};

std::optional<int64_t> last_dim(const Value* v) {
  if (!v || !v->type.dims || v->type.dims->empty()) return std::nullopt;
  return v->type.dims->back().constant();
}

// Ops that move or select elements without mixing channels: element (.., j) of the output
// comes from element (.., j) of the input, so a division by s_j passes through exactly.
// A reshape-like op qualifies when the last dim is K on both sides (row-major order then
// keeps every element's channel).
bool keeps_channels(const Node* p, int64_t k) {
  const std::string& op = p->op_type();
  const Value* in = p->input(0);
  const Value* out = p->output(0);
  if (last_dim(out) != k) return false;
  if (op == "Identity") return true;
  if (op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten") return last_dim(in) == k;
  if (op == "Transpose") {
    const std::vector<int64_t> perm = p->attr_ints("perm");
    return !perm.empty() && perm.back() == static_cast<int64_t>(perm.size()) - 1;
  }
  if (op == "Gather") {
    if (!in->type.dims || last_dim(in) != k) return false;
    const int64_t rank = static_cast<int64_t>(in->type.dims->size());
    const int64_t axis = p->attr_int("axis", 0);
    return axis != rank - 1 && axis != -1;
  }
  return false;
}

// The chain that can absorb a division of `x` (the output of `p`) by s, or nullopt with
// `why` set.
std::optional<Chain> fold_chain(Node* p, const Value* x, int64_t k, std::string& why) {
  if (!p) return why = "it is a graph input", std::nullopt;
  if (!p->domain().empty()) return why = "its producer " + p->describe() + " is not a standard op", std::nullopt;
  const std::string& op = p->op_type();
  if (keeps_channels(p, k)) {
    std::optional<Chain> inner = fold_chain(p->input(0)->producer(), p->input(0), k, why);
    if (!inner) return std::nullopt;
    inner->nodes.insert(inner->nodes.begin(), p);
    inner->what += " (through " + op + " '" + p->name() + "')";
    return inner;
  }
  if (op == "LayerNormalization") {
    const int64_t axis = p->attr_int("axis", -1);
    const bool last = axis == -1 || (x->type.dims && axis == static_cast<int64_t>(x->type.dims->size()) - 1);
    const Value* beta = p->input(2);
    if (!last || !per_channel_vector(p->input(1), k, x) || (beta && !per_channel_vector(beta, k, x)))
      return why = p->describe() + " does not normalize over the last axis alone", std::nullopt;
    Chain c{{p}, {{p, 1, false}}, true, "gamma and beta of LayerNormalization '" + p->name() + "'"};
    if (beta) c.edits.push_back({p, 2, false});
    return c;
  }
  if (op == "Mul" || op == "Add") {
    for (size_t slot = 0; slot < 2; ++slot) {
      if (!per_channel_vector(p->input(slot), k, x)) continue;
      if (op == "Mul") return Chain{{p}, {{p, slot, false}}, true, "the per-channel constant of Mul '" + p->name() + "'"};
      // (y + b) / s = y / s + b / s: y must take 1/s too.
      Value* y = p->input(1 - slot);
      std::optional<Chain> inner = fold_chain(y->producer(), y, k, why);
      if (!inner) return std::nullopt;
      inner->nodes.insert(inner->nodes.begin(), p);
      inner->edits.push_back({p, slot, false});
      inner->what = inner->what + " and the bias of Add '" + p->name() + "'";
      return inner;
    }
    const Value* c = float_constant(p->input(1)) ? p->input(1) : p->input(0);
    if (float_constant(c))
      return why = p->describe() + " has a constant of shape " + shape_to_string(c->constant()->shape()) +
                   ", not one value per channel", std::nullopt;
    return why = p->describe() + " combines two activations", std::nullopt;
  }
  if (op == "MatMul" && float_constant(p->input(1)) && p->input(1)->constant()->rank() == 2 &&
      p->input(1)->constant()->shape()[1] == k)
    return Chain{{p}, {{p, 1, false}}, false, "the output columns of MatMul '" + p->name() + "'"};
  if (op == "Gemm" && float_constant(p->input(1)) && p->attr_int("transA", 0) == 0) {
    const bool trans_b = p->attr_int("transB", 0) != 0;
    const Tensor& b = *p->input(1)->constant();
    const Value* bias = p->input(2);
    if (b.rank() == 2 && b.shape()[trans_b ? 0 : 1] == k && (!bias || per_channel_vector(bias, k, x))) {
      Chain c{{p}, {{p, 1, trans_b}}, false, "the output channels of Gemm '" + p->name() + "'"};
      if (bias) c.edits.push_back({p, 2, false});
      return c;
    }
  }
  return why = "its producer " + p->describe() + " has no per-channel parameters to fold into", std::nullopt;
}

class GroupSmoother {
 public:
  GroupSmoother(Graph& g, const SmoothingDecision& d) : graph_(g), d_(d), patch_(make_patch(g)) {
    for (float s : d.scale) inverse_.push_back(1.0f / s);
  }

  std::string apply() {
    Value* x = graph_.value(d_.group.activation);
    std::set<Node*> consumers;
    for (const std::string& name : d_.group.consumers) consumers.insert(node_named(graph_, name));
    for (Node* n : consumers) scale_weight(n);
    bool other_readers = x->is_graph_output();
    for (const Use& u : x->uses()) other_readers |= !consumers.count(u.node);

    std::string why;
    std::optional<Chain> chain = fold_chain(x->producer(), x, d_.group.channels, why);
    // Inside the chain each value must feed only the next chain node, or the scale would
    // reach readers outside the group.
    for (size_t i = 1; chain && i < chain->nodes.size(); ++i) {
      const Value* v = chain->nodes[i]->output(0);
      other_readers |= v->is_graph_output() || v->uses().size() != 1;
    }
    std::string where;
    if (chain && !other_readers) {
      for (const ParamEdit& e : chain->edits) patch_.set_input(e.node, e.slot, divided(e));
      where = chain->what;
    } else if (chain && chain->cloneable) {
      Value* xs = clone_chain(*chain, 0);
      for (Node* n : consumers) patch_.set_input(n, 0, xs);
      where = "a copy of " + chain->what + " for this path (its output has other readers)";
    } else {
      Value* inv = patch_.add_initializer(x->name() + "_smooth_inverse_scale",
                                          Tensor::from_vector<float>({d_.group.channels}, inverse_));
      Node* mul = patch_.add_node("Mul", {x, inv}, 1, {}, "", x->name() + "_smooth");
      for (Node* n : consumers) patch_.set_input(n, 0, mul->output(0));
      where = "an explicit Mul by 1/s (" + (chain ? "its producer's other readers must see it unscaled" : why) + ")";
    }
    for (Value* old : replaced_)
      if (old->uses().size() == static_cast<size_t>(replaced_count_[old]) && !old->is_graph_output())
        patch_.remove_initializer(old);
    patch_.apply();
    return where;
  }

 private:
  // The group reads s * W: K is B's rows for MatMul and Gemm, its columns under transB.
  void scale_weight(Node* n) {
    Value* b = n->input(1);
    const bool trans_b = n->op_type() == "Gemm" && n->attr_int("transB", 0) != 0;
    Value* nb = patch_.add_initializer(b->name() + "_smoothed", scaled(*b->constant(), d_.scale, !trans_b));
    patch_.set_input(n, 1, nb);
    note_replaced(b);
  }

  Value* divided(const ParamEdit& e) {
    Value* c = e.node->input(e.slot);
    note_replaced(c);
    return patch_.add_initializer(c->name() + "_smoothed", scaled(*c->constant(), inverse_, e.along_rows));
  }

  // Copies chain nodes [i, end) with divided parameters; returns the copy of nodes[i]'s output.
  Value* clone_chain(const Chain& chain, size_t i) {
    Node* n = chain.nodes[i];
    std::vector<Value*> inputs(n->inputs().begin(), n->inputs().end());
    for (const ParamEdit& e : chain.edits)
      if (e.node == n) inputs[e.slot] = patch_.add_initializer(n->input(e.slot)->name() + "_smoothed",
                                                              scaled(*n->input(e.slot)->constant(), inverse_, e.along_rows));
    if (i + 1 < chain.nodes.size()) {
      const Value* deeper = chain.nodes[i + 1]->output(0);
      for (Value*& in : inputs)
        if (in == deeper) in = clone_chain(chain, i + 1);
    }
    return patch_.add_node(n->op_type(), inputs, 1, n->attributes(), n->domain(), n->name() + "_smoothed")->output(0);
  }

  void note_replaced(Value* v) {
    if (!replaced_count_[v]++) replaced_.push_back(v);
  }

  Graph& graph_;
  const SmoothingDecision& d_;
  GraphPatch patch_;
  std::vector<float> inverse_;
  std::vector<Value*> replaced_;
  std::map<Value*, int> replaced_count_;
};

}  // namespace

std::vector<SmoothFold> apply_smoothing(Graph& graph, const std::vector<SmoothingDecision>& decisions) {
  std::vector<SmoothFold> folds;
  for (const SmoothingDecision& d : decisions) {
    if (!d.smoothed) continue;
    if (d.scale.size() != static_cast<size_t>(d.group.channels))
      fail("smoothing '", d.group.activation, "': ", d.scale.size(), " scales for ", d.group.channels, " channels");
    folds.push_back({d.group.activation, GroupSmoother(graph, d).apply()});
  }
  return folds;
}

}  // namespace octet::quant
