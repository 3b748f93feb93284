// Constant folding through the reference kernels.
#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

TEST(FoldConstants, FoldsChainsIntoOneInitializer) {
  auto make = [] {
    PassGraph b;
    b.input("x", DType::Float32, {3});
    b.init("w", Tensor::from_vector<float>({3}, {1, 2, 3}));
    b.constant_node("two", 2.0f);
    b.node("Mul", {"w", "two"}, {"w2"});          // folded
    b.node("Neg", {"w2"}, {"w3"});                // folded, chain
    b.node("Add", {"x", "w3"}, {"y"});            // reads x: stays
    b.output("y");
    return b.done();
  };
  auto g = testing::rewrite_and_compare(make, passes::fold_constants(),
                                        {{"x", testing::ramp(DType::Float32, {3})}}, 0.0);
  ASSERT_EQ(g->node_count(), 1u);
  const Value* folded = g->nodes()[0]->input(1);
  ASSERT_TRUE(folded->is_initializer());
  EXPECT_EQ(folded->constant()->to_float_vector(), (std::vector<float>{-2, -4, -6}));
  // The original initializer is untouched (and now unread, for dead-code removal).
  EXPECT_EQ(g->value("w")->constant()->to_float_vector(), (std::vector<float>{1, 2, 3}));
  EXPECT_TRUE(g->value("w")->uses().empty());
}

TEST(FoldConstants, CountsWhatItFolded) {
  PassGraph b;
  b.input("x", DType::Float32, {3});
  b.constant_node("c", 1.0f);
  b.node("Cast", {"c"}, {"c16"}, {Attribute::make_int("to", 10)});
  b.node("Cast", {"c16"}, {"c32"}, {Attribute::make_int("to", 1)});
  b.node("Add", {"x", "c32"}, {"y"});
  b.output("y");
  auto g = b.done();
  OptimizeReport r = run_pass(*g, passes::fold_constants());
  EXPECT_EQ(r.passes[0].details.at("Constant"), 1);
  EXPECT_EQ(r.passes[0].details.at("Cast"), 2);
  EXPECT_EQ(r.passes[0].nodes_removed, 3);
  EXPECT_EQ(r.passes[0].initializers_added, 1);  // only the value Add reads
}

TEST(FoldConstants, LeavesGraphOutputsRandomOpsAndDequantize) {
  PassGraph b;
  b.input("x", DType::Float32, {2});
  b.constant_node("out_const", 1.0f);  // a graph output: an initializer cannot carry the name
  b.node("RandomUniform", {}, {"noise"},
         {Attribute::make_ints("shape", {2}), Attribute::make_int("dtype", 1)});
  b.init("q", Tensor::from_vector<int8_t>({2}, {10, -10}));
  b.init("scale", Tensor::scalar<float>(0.5f));
  b.node("DequantizeLinear", {"q", "scale"}, {"dq"});
  b.node("Add", {"x", "noise"}, {"a"});
  b.node("Add", {"a", "dq"}, {"y"});
  b.output("y");
  b.output("out_const");
  auto g = b.done();
  OptimizeOptions cleanup;
  cleanup.level = 1;  // int8 weights stay int8 in a written model
  run_pass(*g, passes::fold_constants(), cleanup);
  EXPECT_EQ(count_ops(*g, "Constant"), 1);
  EXPECT_EQ(count_ops(*g, "RandomUniform"), 1);
  EXPECT_EQ(count_ops(*g, "DequantizeLinear"), 1);

  OptimizeOptions fold_dq = cleanup;
  fold_dq.fold_dequantize = true;
  run_pass(*g, passes::fold_constants(), fold_dq);
  EXPECT_EQ(count_ops(*g, "DequantizeLinear"), 0);
}

// Level 2 prepares a graph for octet's runtime: a constant DequantizeLinear that no int8
// matmul can take (here an Add reads it) is folded once; one a MatMul reads is kept for
// fuse_qdq_matmul.
TEST(FoldConstants, Level2FoldsDequantizeNoMatmulReads) {
  auto make = [](const char* reader) {
    PassGraph b;
    b.input("x", DType::Float32, {2, 2});
    b.init("q", Tensor::from_vector<int8_t>({2, 2}, {10, -10, 4, 2}));
    b.init("scale", Tensor::scalar<float>(0.5f));
    b.node("DequantizeLinear", {"q", "scale"}, {"dq"});
    b.node(reader, {"x", "dq"}, {"y"});
    b.output("y");
    return b.done();
  };
  auto added = make("Add");
  run_pass(*added, passes::fold_constants());
  EXPECT_EQ(count_ops(*added, "DequantizeLinear"), 0);
  auto multiplied = make("MatMul");
  run_pass(*multiplied, passes::fold_constants());
  EXPECT_EQ(count_ops(*multiplied, "DequantizeLinear"), 1);

  // A Gemm's C is a bias, not an int8 operand: onnxruntime's quantizer stores it as
  // DequantizeLinear of int32, folded to the float bias; B's DequantizeLinear stays.
  PassGraph b;
  b.input("x", DType::Float32, {3, 2});
  b.init("w", Tensor::from_vector<int8_t>({2, 2}, {10, -10, 4, 2}));
  b.init("ws", Tensor::scalar<float>(0.5f));
  b.init("c", Tensor::from_vector<int32_t>({2}, {100, -7}));
  b.init("cs", Tensor::scalar<float>(0.25f));
  b.node("DequantizeLinear", {"w", "ws"}, {"wd"});
  b.node("DequantizeLinear", {"c", "cs"}, {"cd"});
  b.node("Gemm", {"x", "wd", "cd"}, {"y"});
  b.output("y");
  auto gemm = b.done();
  run_pass(*gemm, passes::fold_constants());
  EXPECT_EQ(count_ops(*gemm, "DequantizeLinear"), 1);
  const Value* bias = gemm->value("y")->producer()->input(2);
  ASSERT_TRUE(bias->constant());
  EXPECT_FLOAT_EQ(bias->constant()->data<float>()[0], 25.0f);
}

TEST(FoldConstants, AValueASubgraphReadsIsNotReplaced) {
  PassGraph b;
  b.input("x", DType::Float32, {1});
  b.constant_node("c", 2.0f);
  Node* holder = b.node("Relu", {"x"}, {"y"});
  b.g->add_implicit_input(holder, b.g->value("c"));
  b.output("y");
  auto g = b.done();
  run_pass(*g, passes::fold_constants());
  EXPECT_EQ(count_ops(*g, "Constant"), 1);
  EXPECT_EQ(g->value("c")->producer()->op_type(), "Constant");
}

TEST(FoldConstants, RespectsTheMemoryBudget) {
  auto make = [] {
    PassGraph b;
    b.input("x", DType::Float32, {1024});
    b.init("shape", Tensor::from_vector<int64_t>({1}, {1024}));
    b.node("ConstantOfShape", {"shape"}, {"ones"},
           {Attribute::make_tensor("value", Tensor::from_vector<float>({1}, {1.0f}))});
    b.node("Add", {"x", "ones"}, {"y"});
    b.output("y");
    return b.done();
  };
  OptimizeOptions small;
  small.fold_max_bytes = 1024;  // the 4 KiB result does not fit
  auto g = make();
  run_pass(*g, passes::fold_constants(), small);
  EXPECT_EQ(count_ops(*g, "ConstantOfShape"), 1);
  run_pass(*g, passes::fold_constants());  // default budget: 1 MiB
  EXPECT_EQ(count_ops(*g, "ConstantOfShape"), 0);
}

TEST(FoldConstants, MultiOutputNodes) {
  auto make = [] {
    PassGraph b;
    b.input("x", DType::Float32, {2});
    b.init("w", Tensor::from_vector<float>({4}, {1, 2, 3, 4}));
    b.init("split", Tensor::from_vector<int64_t>({2}, {2, 2}));
    b.node("Split", {"w", "split"}, {"lo", "hi"}, {Attribute::make_int("axis", 0)});
    b.node("Add", {"x", "lo"}, {"a"});
    b.node("Mul", {"a", "hi"}, {"y"});
    b.output("y");
    return b.done();
  };
  auto g = testing::rewrite_and_compare(make, passes::fold_constants(),
                                        {{"x", testing::ramp(DType::Float32, {2})}}, 0.0);
  EXPECT_EQ(count_ops(*g, "Split"), 0);
}

TEST(FoldConstants, AFailingKernelIsLeftForTheRuntime) {
  PassGraph b;
  b.input("x", DType::Float32, {2});
  b.init("w", Tensor::from_vector<float>({2}, {1, 2}));
  b.init("bad_shape", Tensor::from_vector<int64_t>({1}, {3}));
  b.node("Reshape", {"w", "bad_shape"}, {"r"});  // 2 elements cannot become 3
  b.node("Add", {"x", "r"}, {"y"});
  b.output("y");
  auto g = b.g;
  OptimizeReport r = run_pass(*g, passes::fold_constants());
  EXPECT_EQ(count_ops(*g, "Reshape"), 1);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings[0].find("not folding node"), std::string::npos) << r.warnings[0];
}

}  // namespace
}  // namespace octet
