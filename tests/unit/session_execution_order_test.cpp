// execution_order (runtime/execution_order.h): nodes computed from constants alone run just
// before their first reader, everything else keeps the graph's order; a Session following
// it plans one dequantized weight at a time instead of all of them.
#include <gtest/gtest.h>

#include "cpu_test_util.h"
#include "runtime/execution_order.h"

namespace octet::testing {
namespace {

constexpr int64_t kDim = 64;

// x [1, 64] through three MatMuls whose weights are int8 + DequantizeLinear, the
// DequantizeLinears first in graph order (as a quantizer that appends them and a stable
// topological sort leave them), w3 also read by a second MatMul, and a Transpose of a
// constant feeding the last DequantizeLinear's scale path.
std::shared_ptr<Graph> weights_first_graph() {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 21;
  g->add_input("x", TensorType(DType::Float32, DimVector{Dim(1), Dim(kDim)}));
  for (int i = 1; i <= 3; ++i) {
    std::string w = "w";
    w += std::to_string(i);
    Tensor q(DType::Int8, {kDim, kDim});
    for (int64_t j = 0; j < q.numel(); ++j) q.mutable_data<int8_t>()[j] = static_cast<int8_t>((j * 7 + i) % 11 - 5);
    g->add_initializer(w + "_q", std::make_shared<const Tensor>(std::move(q)));
    g->add_initializer(w + "_s", std::make_shared<const Tensor>(Tensor::scalar<float>(0.01f * i)));
  }
  g->add_node("Transpose", {"w3_q"}, {"w3_qt"}, {}, "", "transpose_w3");
  g->add_node("DequantizeLinear", {"w1_q", "w1_s"}, {"w1"}, {}, "", "dq1");
  g->add_node("DequantizeLinear", {"w2_q", "w2_s"}, {"w2"}, {}, "", "dq2");
  g->add_node("DequantizeLinear", {"w3_qt", "w3_s"}, {"w3"}, {}, "", "dq3");
  g->add_node("MatMul", {"x", "w1"}, {"h1"}, {}, "", "mm1");
  g->add_node("Relu", {"h1"}, {"r1"}, {}, "", "relu");
  g->add_node("MatMul", {"r1", "w2"}, {"h2"}, {}, "", "mm2");
  g->add_node("MatMul", {"h2", "w3"}, {"h3"}, {}, "", "mm3");
  g->add_node("MatMul", {"h3", "w3"}, {"y"}, {}, "", "mm4");
  g->mark_output(g->value("y"));
  return g;
}

std::vector<std::string> names(const std::vector<const Node*>& order) {
  std::vector<std::string> out;
  for (const Node* n : order) out.push_back(n->name());
  return out;
}

TEST(ExecutionOrder, ConstantOnlyNodesRunJustBeforeTheirFirstReader) {
  const auto g = weights_first_graph();
  EXPECT_EQ(names(execution_order(*g)),
            (std::vector<std::string>{"dq1", "mm1", "relu", "dq2", "mm2", "transpose_w3", "dq3", "mm3", "mm4"}));
}

TEST(ExecutionOrder, OtherGraphsKeepTheirOrder) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 21;
  g->add_input("x", TensorType(DType::Float32, DimVector{Dim(4)}));
  g->add_initializer("c", std::make_shared<const Tensor>(Tensor::from_vector<float>({4}, {1, 2, 3, 4})));
  g->add_node("Relu", {"x"}, {"a"}, {}, "", "a");
  g->add_node("Neg", {"x"}, {"b"}, {}, "", "b");  // independent of a: stays after it
  g->add_node("Add", {"a", "c"}, {"s"}, {}, "", "s");
  g->add_node("Mul", {"s", "b"}, {"y"}, {}, "", "y");
  g->mark_output(g->value("y"));
  EXPECT_EQ(names(execution_order(*g)), (std::vector<std::string>{"a", "b", "s", "y"}));
}

TEST(ExecutionOrder, SessionHoldsOneDequantizedWeightAtATime) {
  const auto g = weights_first_graph();
  SessionOptions o;
  o.kernels = KernelChoice::Reference;
  const Session s(std::shared_ptr<const Graph>(g), o);
  // At most two float weights (w3 while mm3 and mm4 read it, and nothing else) plus the
  // [1, 64] activations; in graph order all three would be live together.
  const size_t weight = kDim * kDim * sizeof(float);
  EXPECT_LT(s.memory_stats({}).arena_bytes, 2 * weight) << "arena " << s.memory_stats({}).arena_bytes;
  // And it computes what the graph says: y = (relu(x W1) W2 W3) W3.
  const Tensor x = random_f32({1, kDim}, 3, -1, 1);
  const NamedTensors out = s.run({{"x", x}});
  SessionOptions fast;
  const NamedTensors again = Session(std::shared_ptr<const Graph>(g), fast).run({{"x", x}});
  expect_close(out[0].second, again[0].second, {1e-5, 1e-6}, "reference vs optimized kernels");
}

}  // namespace
}  // namespace octet::testing
