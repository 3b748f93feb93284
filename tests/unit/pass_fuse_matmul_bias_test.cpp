// MatMul + constant bias -> octet.MatMulBias.
#include <gtest/gtest.h>

#include <cstring>

#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

// Linear layers as torch exports them at rank 3: MatMul(x, W) then Add(bias, .).
std::shared_ptr<Graph> linear(DType t = DType::Float32, std::vector<int64_t> bias_shape = {6}, bool bias_first = true) {
  PassGraph b;
  b.input("x", t, {Dim::symbol("batch"), Dim::symbol("seq"), 4});
  b.init("w", testing::ramp(t, {4, 6}, 1, 1.0f));
  b.init("bias", testing::ramp(t, bias_shape, 2, 1.0f));
  b.node("MatMul", {"x", "w"}, {"mm"});
  if (bias_first) b.node("Add", {"bias", "mm"}, {"y"});
  else b.node("Add", {"mm", "bias"}, {"y"});
  b.output("y");
  return b.done();
}

NamedTensors inputs(DType t = DType::Float32) { return {{"x", testing::ramp(t, {2, 3, 4})}}; }

TEST(FuseMatMulBias, BothOperandOrdersBitExact) {
  for (bool bias_first : {true, false}) {
    auto g = testing::rewrite_and_compare([&] { return linear(DType::Float32, {6}, bias_first); },
                                          passes::fuse_matmul_bias(), inputs(), 0.0);
    ASSERT_EQ(g->node_count(), 1u);
    const Node* n = g->nodes()[0];
    EXPECT_EQ(n->domain(), "octet");
    EXPECT_EQ(n->op_type(), "MatMulBias");
    EXPECT_EQ(n->input(2), g->value("bias"));  // a 1-D bias is read as it is
    EXPECT_EQ(dims_to_string(*n->output(0)->type.dims), "[batch,seq,6]");
  }
}

TEST(FuseMatMulBias, HalfPrecisionIsBitExactToo) {
  for (DType t : {DType::Float16, DType::BFloat16})
    testing::rewrite_and_compare([&] { return linear(t); }, passes::fuse_matmul_bias(), inputs(t), 0.0);
}

TEST(FuseMatMulBias, RankedBiasBecomesA1DViewOfTheSameBytes) {
  auto g = testing::rewrite_and_compare([] { return linear(DType::Float32, {1, 1, 6}); }, passes::fuse_matmul_bias(),
                                        inputs(), 0.0);
  const Value* bias = g->nodes()[0]->input(2);
  EXPECT_NE(bias, g->find_value("bias"));
  EXPECT_EQ(bias->constant()->shape(), (std::vector<int64_t>{6}));
  // Shared bytes, and the original initializer keeps its own shape.
  EXPECT_EQ(bias->constant()->raw(), g->value("bias")->constant()->raw());
  EXPECT_EQ(g->value("bias")->constant()->shape(), (std::vector<int64_t>{1, 1, 6}));
}

TEST(FuseMatMulBias, SharedBiasServesTwoLayers) {
  auto make = [] {
    PassGraph b;
    b.input("x", DType::Float32, {3, 4});
    b.init("w", testing::ramp(DType::Float32, {4, 4}, 1));
    b.init("bias", testing::ramp(DType::Float32, {4}, 2));
    b.node("MatMul", {"x", "w"}, {"m1"});
    b.node("Add", {"m1", "bias"}, {"h"});
    b.node("MatMul", {"h", "w"}, {"m2"});
    b.node("Add", {"bias", "m2"}, {"y"});
    b.output("y");
    return b.done();
  };
  auto g = testing::rewrite_and_compare(make, passes::fuse_matmul_bias(), {{"x", testing::ramp(DType::Float32, {3, 4})}},
                                        0.0);
  EXPECT_EQ(count_ops(*g, "MatMulBias", "octet"), 2);
  EXPECT_EQ(g->value("bias")->uses().size(), 2u);
}

TEST(FuseMatMulBias, LeavesNearMissesAlone) {
  auto fused = [](const std::shared_ptr<Graph>& g) {
    run_pass(*g, passes::fuse_matmul_bias());
    return count_ops(*g, "MatMulBias", "octet");
  };
  EXPECT_EQ(fused(linear(DType::Float32, {1, 6})), 1);
  EXPECT_EQ(fused(linear(DType::Float32, {3, 6})), 0);     // varies along seq: not a bias
  EXPECT_EQ(fused(linear(DType::Float32, {1, 1, 1, 6})), 0);  // would add a dim

  {  // the MatMul result is read elsewhere
    auto g = linear();
    g->mark_output(g->value("mm"));
    EXPECT_EQ(fused(g), 0);
  }
  {  // a bias that is a graph input is not a constant
    PassGraph b;
    b.input("x", DType::Float32, {3, 4});
    b.input("bias", DType::Float32, {6});
    b.init("w", testing::ramp(DType::Float32, {4, 6}));
    b.node("MatMul", {"x", "w"}, {"mm"});
    b.node("Add", {"mm", "bias"}, {"y"});
    b.output("y");
    EXPECT_EQ(fused(b.done()), 0);
  }
  {  // integer MatMul stays as it is
    PassGraph b;
    b.input("x", DType::Int32, {3, 4});
    b.init("w", Tensor::from_vector<int32_t>({4, 1}, {1, 2, 3, 4}));
    b.init("bias", Tensor::from_vector<int32_t>({1}, {5}));
    b.node("MatMul", {"x", "w"}, {"mm"});
    b.node("Add", {"mm", "bias"}, {"y"});
    b.output("y");
    EXPECT_EQ(fused(b.done()), 0);
  }
}

}  // namespace
}  // namespace octet
