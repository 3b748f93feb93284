// fuse_grouped_attention's refusals, and the in-place runner's, on the tiny Llama with past
// (tests/models/fixtures/llama_gen_with_past.onnx; the matches themselves are checked
// against onnxruntime in generate_kv_fixtures_test.cpp): a value inside the attention
// block that something else reads keeps that block unfused, and a present tensor read by
// more than Shape nodes keeps the in-place runner away.
#include <gtest/gtest.h>

#include "generate/in_place_kv_runner.h"
#include "onnx/model_io.h"
#include "pass_test_util.h"
#include "passes/pipeline.h"

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

}  // namespace
}  // namespace octet
