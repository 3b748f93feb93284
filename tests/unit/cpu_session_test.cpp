// A small transformer-like graph (LayerNorm -> Gelu -> residual Add -> Softmax) run by a
// Session with the optimized kernels and with the reference ones.
#include <gtest/gtest.h>

#include "cpu_test_util.h"

namespace octet::testing {
namespace {

std::shared_ptr<const Graph> block_graph(int64_t seq, int64_t hidden) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 20;
  g->add_input("x", TensorType(DType::Float32, DimVector{Dim(1), Dim(seq), Dim(hidden)}));
  g->add_initializer("gamma", std::make_shared<const Tensor>(random_f32({hidden}, 11, 0.5f, 1.5f)));
  g->add_initializer("beta", std::make_shared<const Tensor>(random_f32({hidden}, 12, -0.2f, 0.2f)));
  g->add_node("LayerNormalization", {"x", "gamma", "beta"}, {"ln"}, {Attribute::make_float("epsilon", 1e-5f)}, "", "ln");
  g->add_node("Gelu", {"ln"}, {"act"}, {}, "", "gelu");
  g->add_node("Add", {"act", "x"}, {"res"}, {}, "", "residual");
  g->add_node("Softmax", {"res"}, {"y"}, {Attribute::make_int("axis", -1)}, "", "softmax");
  g->mark_output(g->value("y"));
  return g;
}

TEST(CpuSession, OptimizedBlockMatchesReference) {
  for (auto [seq, hidden] : {std::pair<int64_t, int64_t>{128, 64}, {5, 33}, {1, 1}}) {
    auto g = block_graph(seq, hidden);
    const NamedTensors in = {{"x", random_f32({1, seq, hidden}, 13, -4, 4)}};
    SessionOptions ref_opts;
    ref_opts.kernels = KernelChoice::Reference;
    Session reference(g, ref_opts);
    EXPECT_EQ(reference.optimized_nodes(), 0);
    const NamedTensors want = reference.run(in);
    for (IsaLevel level : available_isas()) {
      ScopedIsaLevel scoped(level);
      SessionOptions opts;
      opts.threads = 2;
      Session optimized(g, opts);
      EXPECT_EQ(optimized.optimized_nodes(), 4);
      EXPECT_TRUE(optimized.reference_ops().empty());
      const NamedTensors got = optimized.run(in);
      expect_close(got.at(0).second, want.at(0).second, {2e-6, 1e-9}, std::string("block at ") + isa_name(level));
    }
  }
}

}  // namespace
}  // namespace octet::testing
