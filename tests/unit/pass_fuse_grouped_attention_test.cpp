// fuse_grouped_attention's refusals, and the in-place runner's, on the tiny Llama with past
// (tests/models/fixtures/llama_gen_with_past.onnx; the matches themselves are checked
// against onnxruntime in generate_kv_fixtures_test.cpp): a value inside the attention
// block that something else reads keeps that block unfused, and a present tensor read by
// more than Shape nodes keeps the in-place runner away. And the static int8 form T5's
// decoders take after `octet quantize --calib` (Q/DQ on Q, K^T, V and the probabilities;
// Softmax or the per-row form): one GroupedAttention with the fake quantizations as inputs,
// computing what the Q/DQ chain computes.
#include <gtest/gtest.h>

#include "generate/in_place_kv_runner.h"
#include "onnx/model_io.h"
#include "pass_test_util.h"
#include "passes/pattern.h"
#include "passes/pipeline.h"
#include "passes/rewrites/rewrites.h"

namespace octet {
namespace {

std::shared_ptr<Graph> llama() {
  return std::shared_ptr<Graph>(
      load_model(std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/llama_gen_with_past.onnx").graph);
}

TEST(FuseGroupedAttention, LeavesABlockWhoseSoftmaxIsAGraphOutput) {
  auto g = llama();
  Node* first = nullptr;
  for (Node* n : g->nodes())
    if (n->op_type() == "Softmax" && !first) first = n;
  ASSERT_TRUE(first);
  g->mark_output(first->output(0));
  optimize(*g);
  EXPECT_EQ(testing::count_ops(*g, "GroupedAttention", "octet"), 1);
  EXPECT_EQ(testing::count_ops(*g, "Softmax"), 1);
}

TEST(InPlaceRunner, RefusesAPresentReadByMoreThanShapeAndLeavesTheGraphRunnable) {
  auto g = llama();
  g->add_node("Neg", {"present.0.key"}, {"negated_present"});
  g->mark_output(g->value("negated_present"));
  std::string why;
  EXPECT_FALSE(generate::make_in_place_runner(g, SessionOptions{}, &why));
  EXPECT_NE(why.find("present.0.key"), std::string::npos) << why;
  EXPECT_NE(why.find("readers other than"), std::string::npos) << why;
  // The refusal touched nothing: the (optimized) graph still runs with its presents.
  EXPECT_EQ(testing::count_ops(*g, "GroupedAttention", "octet"), 2);
  EXPECT_EQ(testing::count_ops(*g, "CachedAttention", "octet"), 0);
  EXPECT_TRUE(verify_graph(*g).empty());
}

constexpr int64_t B = 2, H = 3, S = 2, T = 6, D = 4;

// x -> QuantizeLinear -> DequantizeLinear = `name`, per-tensor uint8.
void fake_quant(testing::PassGraph& p, const std::string& x, const std::string& name, float scale, int zero_point) {
  p.scalar(name + "_scale", scale);
  p.init(name + "_zp", Tensor::scalar<uint8_t>(static_cast<uint8_t>(zero_point)));
  p.node("QuantizeLinear", {x, name + "_scale", name + "_zp"}, {name + "_q"});
  p.node("DequantizeLinear", {name + "_q", name + "_scale", name + "_zp"}, {name});
}

// T5's decoder attention over its cache, static int8: Q [B,H,S,D], K = present [B,H,T,D],
// V [B,H,T,D], the position bias + mask [1,H,S,T] added to the unscaled scores.
std::shared_ptr<Graph> int8_t5_chain(bool rows, bool v_quantized = true) {
  testing::PassGraph p;
  p.input("q", DType::Float32, {B, H, S, D});
  p.input("k", DType::Float32, {B, H, T, D});
  p.input("v", DType::Float32, {B, H, T, D});
  p.input("bias", DType::Float32, {1, H, S, T});
  p.node("Transpose", {"k"}, {"kt"}, {Attribute::make_ints("perm", {0, 1, 3, 2})});
  fake_quant(p, "q", "q_dq", 6.0f / 255, 128);
  fake_quant(p, "kt", "kt_dq", 6.0f / 255, 128);
  fake_quant(p, "v", "v_dq", 6.0f / 255, 128);
  p.node("MatMul", {"q_dq", "kt_dq"}, {"scores"});
  p.node("Add", {"scores", "bias"}, {"biased"});
  if (rows) {
    p.node("ReduceMax", {"biased"}, {"row_max"}, {Attribute::make_ints("axes", {-1}), Attribute::make_int("keepdims", 1)});
    p.node("Sub", {"biased", "row_max"}, {"shifted"});
    p.node("Exp", {"shifted"}, {"probs"});
    p.init("sum_axes", passes::int64s({-1}));
    p.node("ReduceSum", {"probs", "sum_axes"}, {"row_sum"}, {Attribute::make_int("keepdims", 1)});
    fake_quant(p, "probs", "p_dq", 1.0f / 255, 0);
    p.node("MatMul", {"p_dq", v_quantized ? "v_dq" : "v"}, {"unnormalized"});
    p.node("Div", {"unnormalized", "row_sum"}, {"mixed"});
  } else {
    p.node("Softmax", {"biased"}, {"probs"}, {Attribute::make_int("axis", -1)});
    fake_quant(p, "probs", "p_dq", 1.0f / 255, 0);
    p.node("MatMul", {"p_dq", "v_dq"}, {"mixed"});
  }
  p.node("Transpose", {"mixed"}, {"merged"}, {Attribute::make_ints("perm", {0, 2, 1, 3})});
  p.init("y_shape", passes::int64s({B, S, H * D}));
  p.node("Reshape", {"merged", "y_shape"}, {"y"});
  p.output("y");
  return p.done();
}

TEST(FuseGroupedAttention, StaticInt8T5AttentionBecomesFakeQuantizedGroupedAttention) {
  for (bool rows : {true, false}) {
    auto make = [&] { return int8_t5_chain(rows); };
    auto g = testing::rewrite_and_compare(make, passes::fuse_grouped_attention(), testing::ramp_inputs(*make()), 1e-5);
    EXPECT_EQ(testing::count_ops(*g, "GroupedAttention", "octet"), 1) << rows;
    EXPECT_EQ(testing::count_ops(*g, "QuantizeLinear") + testing::count_ops(*g, "MatMul"), 0) << rows;
    for (const Node* n : g->nodes())
      if (n->op_type() == "GroupedAttention") {
        ASSERT_EQ(n->inputs().size(), 13u);
        EXPECT_EQ(n->attr_int("row_probabilities", -1), rows ? 1 : 0);
        EXPECT_EQ(n->input(3)->name(), "bias");
        EXPECT_EQ(n->input(11)->name(), "p_dq_scale");
      }
  }
}

TEST(FuseGroupedAttention, LeavesAnInt8ChainMissingAFakeQuantization) {
  auto g = int8_t5_chain(true, false);  // V read unquantized: no op computes that mix
  run_pass(*g, passes::fuse_grouped_attention());
  EXPECT_EQ(testing::count_ops(*g, "GroupedAttention", "octet"), 0);
}

}  // namespace
}  // namespace octet
