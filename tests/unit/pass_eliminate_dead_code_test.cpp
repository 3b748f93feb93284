// Dead node and unused initializer removal.
#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace octet {
namespace {

using testing::PassGraph;

TEST(EliminateDeadCode, RemovesDeadChainsAndTheInitializersOnlyTheyRead) {
  PassGraph b;
  b.input("x", DType::Float32, {4});
  b.init("w", Tensor::from_vector<float>({4}, {1, 2, 3, 4}));
  b.init("dead_w", Tensor::from_vector<float>({4}, {5, 6, 7, 8}));
  b.init("never_read", Tensor::scalar<float>(1));
  b.node("Add", {"x", "w"}, {"y"});
  b.node("Mul", {"x", "dead_w"}, {"d1"});  // a dead chain of two
  b.node("Relu", {"d1"}, {"d2"});
  b.output("y");
  auto g = b.done();
  OptimizeReport r = run_pass(*g, passes::eliminate_dead_code());
  EXPECT_EQ(g->node_count(), 1u);
  EXPECT_NE(g->find_value("w"), nullptr);
  EXPECT_EQ(g->find_value("dead_w"), nullptr);
  EXPECT_EQ(g->find_value("never_read"), nullptr);
  EXPECT_EQ(r.passes[0].details.at("dead node"), 2);
  EXPECT_EQ(r.passes[0].details.at("unused initializer"), 2);
  EXPECT_EQ(r.passes[0].nodes_removed, 2);
  EXPECT_EQ(r.passes[0].initializers_removed, 2);
}

TEST(EliminateDeadCode, KeepsAnInitializerThatIsAGraphOutput) {
  PassGraph b;
  b.input("x", DType::Float32, {2});
  b.init("w", Tensor::from_vector<float>({2}, {1, 2}));
  Graph& g = *b.g;
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  b.output("w");  // an initializer that is a graph output stays too
  b.done();
  EXPECT_FALSE(run_pass(g, passes::eliminate_dead_code()).passes[0].changed_runs);
  EXPECT_NE(g.find_value("w"), nullptr);
}

TEST(EliminateDeadCode, ImplicitInputsKeepTheirProducersAlive) {
  // A subgraph-holding node reads `h` from the outer scope: h's producer is live.
  PassGraph b;
  b.input("x", DType::Float32, {2});
  b.node("Neg", {"x"}, {"h"});
  Node* holder = b.node("Relu", {"x"}, {"y"});
  b.g->add_implicit_input(holder, b.g->value("h"));
  b.output("y");
  auto g = b.done();
  run_pass(*g, passes::eliminate_dead_code());
  EXPECT_EQ(g->node_count(), 2u);
  EXPECT_NE(g->find_value("h"), nullptr);
}

TEST(EliminateDeadCode, MultiOutputNodeWithOneUsedOutputStays) {
  PassGraph b;
  b.input("x", DType::Float32, {4});
  b.init("split", Tensor::from_vector<int64_t>({2}, {2, 2}));
  b.node("Split", {"x", "split"}, {"a", "b"}, {Attribute::make_int("axis", 0)});
  b.node("Relu", {"b"}, {"y"});
  b.output("y");
  auto g = b.done();
  EXPECT_EQ(run_pass(*g, passes::eliminate_dead_code()).passes[0].changed_runs, 0);
  EXPECT_EQ(g->node_count(), 2u);
}

}  // namespace
}  // namespace octet
