// Helpers for the pass tests: a small float-graph builder, op counting, deterministic
// inputs, and the check every rewrite test ends with: the rewritten graph computes what
// the original computed, through the Session, on the same inputs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/infer.h"
#include "passes/pipeline.h"
#include "passes/rewrites/rewrites.h"
#include "runtime/session.h"

namespace octet::testing {

// Builds a graph by name; `build` may be called twice to get the original and a copy to rewrite.
class PassGraph {
 public:
  explicit PassGraph(int64_t opset = 17) : g(std::make_shared<Graph>()) { g->opset_imports[""] = opset; }

  Value* input(const std::string& name, DType t, DimVector dims) {
    return g->add_input(name, TensorType(t, std::move(dims)));
  }
  Value* init(const std::string& name, Tensor t) {
    return g->add_initializer(name, std::make_shared<Tensor>(std::move(t)));
  }
  Value* scalar(const std::string& name, float v, DType t = DType::Float32) {
    if (t == DType::Float32) return init(name, Tensor::scalar<float>(v));
    Tensor h(t, {});
    reinterpret_cast<uint16_t*>(h.mutable_raw())[0] = t == DType::Float16 ? float_to_half(v) : float_to_bfloat16(v);
    return init(name, std::move(h));
  }
  // A Constant node (not an initializer) holding a float scalar.
  Value* constant_node(const std::string& name, float v) {
    g->add_node("Constant", {}, {name}, {Attribute::make_tensor("value", Tensor::scalar<float>(v))}, "", name + "_node");
    return g->value(name);
  }
  Node* node(const std::string& op, const std::vector<std::string>& ins, const std::vector<std::string>& outs,
             std::vector<Attribute> attrs = {}, const std::string& domain = "") {
    return g->add_node(op, ins, outs, std::move(attrs), domain, outs.empty() ? op : outs[0] + "_node");
  }
  void output(const std::string& name) { g->mark_output(g->value(name)); }
  // `target` = Shape(y)[0:2] ++ [-1]: the Reshape target torch writes for y.flatten(2)
  // at a symbolic batch (a ViT's patch tokens).
  void flatten2_target(const std::string& y, const std::string& target) {
    node("Shape", {y}, {target + "_shape"});
    init(target + "_zero", Tensor::from_vector<int64_t>({1}, {0}));
    init(target + "_two", Tensor::from_vector<int64_t>({1}, {2}));
    init(target + "_minus_one", Tensor::from_vector<int64_t>({1}, {-1}));
    node("Slice", {target + "_shape", target + "_zero", target + "_two"}, {target + "_lead"});
    node("Concat", {target + "_lead", target + "_minus_one"}, {target}, {Attribute::make_int("axis", 0)});
  }
  // Infers types; the pass tests start from a typed graph as load_model gives.
  std::shared_ptr<Graph> done() {
    infer_graph(*g);
    return g;
  }

  std::shared_ptr<Graph> g;
};

inline int count_ops(const Graph& g, const std::string& op, const std::string& domain = "") {
  int n = 0;
  for (const Node* node : g.nodes()) n += node->op_type() == op && node->domain() == domain;
  return n;
}

// Deterministic values in [-span, span], different per `seed`.
// A near miss: the pass leaves g as it was -- the same node count, and no `op` (the form it
// fuses into) appears.
inline void expect_pass_leaves_alone(Graph& g, const Pass& pass, const std::string& op, const std::string& domain) {
  const size_t nodes = g.node_count();
  run_pass(g, pass);
  EXPECT_EQ(g.node_count(), nodes);
  EXPECT_EQ(count_ops(g, op, domain), 0);
}

inline Tensor ramp(DType t, std::vector<int64_t> shape, int seed = 0, float span = 3.0f) {
  Tensor out(t, std::move(shape));
  for (int64_t i = 0; i < out.numel(); ++i) {
    const float v = span * std::sin(0.37f * static_cast<float>(i) + 1.3f * static_cast<float>(seed));
    if (t == DType::Float32) out.mutable_data<float>()[i] = v;
    else if (t == DType::Float64) out.mutable_data<double>()[i] = v;
    else reinterpret_cast<uint16_t*>(out.mutable_raw())[i] = t == DType::Float16 ? float_to_half(v) : float_to_bfloat16(v);
  }
  return out;
}

// A float32 ramp for every input of `g` without a default, seeds 1, 2, ... in input order
// (the inputs' shapes must be constant).
inline NamedTensors ramp_inputs(const Graph& g) {
  NamedTensors in;
  int seed = 0;
  for (const Value* v : g.inputs()) {
    if (v->is_initializer()) continue;
    std::vector<int64_t> shape;
    for (const Dim& d : *v->type.dims) shape.push_back(*d.constant());
    in.emplace_back(v->name(), ramp(DType::Float32, shape, ++seed));
  }
  return in;
}

// max |a - b| / max |b| over all outputs (0 when both are all zero).
inline double max_relative_error(const NamedTensors& got, const NamedTensors& want) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first);
    EXPECT_EQ(got[i].second.dtype(), want[i].second.dtype()) << got[i].first;
    EXPECT_EQ(got[i].second.shape(), want[i].second.shape()) << got[i].first;
    if (got[i].second.shape() != want[i].second.shape()) return INFINITY;
    std::vector<float> a = got[i].second.to_float_vector(), b = want[i].second.to_float_vector();
    double diff = 0, ref = 0;
    for (size_t k = 0; k < a.size(); ++k) {
      diff = std::max(diff, std::fabs(static_cast<double>(a[k]) - b[k]));
      ref = std::max(ref, std::fabs(static_cast<double>(b[k])));
    }
    worst = std::max(worst, ref > 0 ? diff / ref : diff);
  }
  return worst;
}

inline NamedTensors run_graph(const std::shared_ptr<Graph>& g, const NamedTensors& inputs) {
  return Session(std::shared_ptr<const Graph>(g)).run(inputs);
}

// run_graph on the given kernels; with the optimized ones, every node must have run one
// (a comparison of rewritten and original graphs says little if both fell back).
inline NamedTensors run_graph_with(const std::shared_ptr<Graph>& g, const NamedTensors& inputs, KernelChoice kernels) {
  SessionOptions opts;
  opts.kernels = kernels;
  Session session(std::shared_ptr<const Graph>(g), opts);
  if (kernels == KernelChoice::Optimized) {
    EXPECT_TRUE(session.reference_ops().empty());
  }
  return session.run(inputs);
}

// Runs `pass` once on a fresh graph from `make`, checks the graph, and compares its
// outputs with the untouched graph's on `inputs`. Returns the rewritten graph.
inline std::shared_ptr<Graph> rewrite_and_compare(const std::function<std::shared_ptr<Graph>()>& make,
                                                  const Pass& pass, const NamedTensors& inputs,
                                                  double tolerance = 1e-6) {
  std::shared_ptr<Graph> original = make(), rewritten = make();
  run_pass(*rewritten, pass);
  EXPECT_TRUE(verify_graph(*rewritten).empty());
  const double err = max_relative_error(run_graph(rewritten, inputs), run_graph(original, inputs));
  EXPECT_LE(err, tolerance) << pass.name;
  return rewritten;
}

}  // namespace octet::testing
