// Identity, inference Dropout and same-type Cast removal.
#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

TEST(EliminateNoops, IdentityChainIsBypassedAndOutputNamesSurvive) {
  auto make = [] {
    PassGraph b;
    b.input("x", DType::Float32, {2, 3});
    b.node("Relu", {"x"}, {"r"});
    b.node("Identity", {"r"}, {"i1"});
    b.node("Identity", {"i1"}, {"i2"});
    b.node("Neg", {"i2"}, {"n"});
    b.node("Identity", {"n"}, {"y"});  // graph output fed by an Identity of a node output
    b.output("y");
    return b.done();
  };
  auto g = testing::rewrite_and_compare(make, passes::eliminate_noops(),
                                        {{"x", testing::ramp(DType::Float32, {2, 3})}}, 0.0);
  EXPECT_EQ(count_ops(*g, "Identity"), 0);
  EXPECT_EQ(g->node_count(), 2u);
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->outputs()[0]->name(), "y");
  EXPECT_EQ(g->outputs()[0]->producer()->op_type(), "Neg");
}

TEST(EliminateNoops, IdentityBetweenTwoInterfaceNamesStays) {
  PassGraph b;
  b.input("x", DType::Float32, {2});
  b.init("w", Tensor::from_vector<float>({2}, {1, 2}));
  b.node("Identity", {"x"}, {"y"});    // input -> output
  b.node("Identity", {"w"}, {"wy"});   // initializer -> output
  b.node("Relu", {"x"}, {"r"});
  b.output("r");
  b.node("Identity", {"r"}, {"r2"});   // output -> output
  b.output("y");
  b.output("wy");
  b.output("r2");
  auto g = b.done();
  EXPECT_EQ(run_pass(*g, passes::eliminate_noops()).passes[0].rewrites, 0);
  EXPECT_EQ(count_ops(*g, "Identity"), 3);
}

TEST(EliminateNoops, AValueASubgraphReadsKeepsItsName) {
  // Subgraph bodies name the outer values they read: bypassing the Identity would leave
  // the body reading a name that no longer exists.
  PassGraph b;
  b.input("x", DType::Float32, {2});
  b.node("Identity", {"x"}, {"outer"});
  Node* holder = b.node("Relu", {"x"}, {"y"});
  b.g->add_implicit_input(holder, b.g->value("outer"));
  b.output("y");
  auto g = b.done();
  EXPECT_EQ(run_pass(*g, passes::eliminate_noops()).passes[0].rewrites, 0);
  EXPECT_EQ(count_ops(*g, "Identity"), 1);
}

TEST(EliminateNoops, IdentityOfAnInitializerFeedsTheInitializerDirectly) {
  // The ViT fixture's shape: Identity(initializer) read by nodes.
  PassGraph b;
  b.input("x", DType::Float32, {2});
  b.init("bias", Tensor::from_vector<float>({2}, {1, 2}));
  b.node("Identity", {"bias"}, {"bias_copy"});
  b.node("Add", {"x", "bias_copy"}, {"y"});
  b.output("y");
  auto g = b.done();
  run_pass(*g, passes::eliminate_noops());
  EXPECT_EQ(g->value("y")->producer()->input(1), g->value("bias"));
}

std::shared_ptr<Graph> dropout_graph(int64_t opset, const std::string& training, bool mask_used) {
  PassGraph b(opset);
  b.input("x", DType::Float32, {4});
  if (training == "input") b.input("training", DType::Bool, {});
  if (training == "false") b.init("training", Tensor::scalar<bool>(false));
  if (training == "true") b.init("training", Tensor::scalar<bool>(true));
  const std::string t = training == "absent" ? "" : "training";
  b.node("Dropout", {"x", "", t}, {"d", mask_used ? "mask" : ""});
  b.node("Relu", {"d"}, {"y"});
  b.output("y");
  if (mask_used) b.output("mask");
  return b.done();
}

TEST(EliminateNoops, DropoutOnlyWhenItCannotDrop) {
  struct Case {
    int64_t opset;
    std::string training;
    bool mask_used;
    bool removed;
  };
  for (const Case& c : {Case{13, "absent", false, true}, Case{13, "false", false, true},
                        Case{13, "true", false, false}, Case{13, "input", false, false},
                        Case{13, "absent", true, false}, Case{11, "absent", false, true}}) {
    auto g = dropout_graph(c.opset, c.training, c.mask_used);
    run_pass(*g, passes::eliminate_noops());
    EXPECT_EQ(count_ops(*g, "Dropout"), c.removed ? 0 : 1)
        << "opset " << c.opset << " training " << c.training << " mask " << c.mask_used;
  }
}

TEST(EliminateNoops, CastOnlyToTheSameType) {
  PassGraph b;
  b.input("x", DType::Float32, {3});
  b.input("like", DType::Float32, {1});
  b.node("Cast", {"x"}, {"same"}, {Attribute::make_int("to", 1)});
  b.node("CastLike", {"same", "like"}, {"same2"});
  b.node("Cast", {"same2"}, {"half"}, {Attribute::make_int("to", 10)});
  b.output("half");
  auto g = b.done();
  OptimizeReport r = run_pass(*g, passes::eliminate_noops());
  EXPECT_EQ(r.passes[0].details.at("Cast"), 1);
  EXPECT_EQ(r.passes[0].details.at("CastLike"), 1);
  ASSERT_EQ(g->node_count(), 1u);
  EXPECT_EQ(g->nodes()[0]->input(0), g->value("x"));
  EXPECT_EQ(g->nodes()[0]->output(0)->type.dtype, DType::Float16);
}

}  // namespace
}  // namespace octet
