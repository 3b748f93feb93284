// bind_symbols + optimize: what folds once batch and seq are fixed.
#include <gtest/gtest.h>

#include <iostream>

#include "onnx/model_io.h"
#include "passes/specialize.h"
#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;

std::shared_ptr<Graph> load(const std::string& name) {
  Model m = load_model(std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/" + name + ".onnx");
  return std::shared_ptr<Graph>(std::move(m.graph));
}

NamedTensors token_ids(int64_t batch, int64_t seq) {
  std::vector<int64_t> ids(static_cast<size_t>(batch * seq));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 37 + 11) % 997);
  return {{"input_ids", Tensor::from_vector<int64_t>({batch, seq}, ids)}};
}

TEST(BindSymbols, FixedSequenceFoldsGpt2ShapeMathAndCausalMask) {
  std::shared_ptr<Graph> original = load("gpt2_tiny"), fixed = load("gpt2_tiny"), generic = load("gpt2_tiny");
  bind_symbols(*fixed, {{"batch", 1}, {"seq", 16}});
  EXPECT_EQ(dims_to_string(*fixed->inputs()[0]->type.dims), "[1,16]");
  EXPECT_EQ(dims_to_string(*fixed->outputs()[0]->type.dims), "[1,16,1000]");
  OptimizeOptions opts;
  opts.verify = true;
  OptimizeReport specialized = optimize(*fixed, opts);
  OptimizeReport symbolic = optimize(*generic, opts);
  std::cout << "gpt2_tiny with batch=1, seq=16: " << specialized.to_text();
  EXPECT_LT(specialized.nodes_after, symbolic.nodes_after);
  EXPECT_EQ(count_ops(*fixed, "Shape"), 0);
  EXPECT_EQ(count_ops(*fixed, "ConstantOfShape"), 0);  // the causal mask is a constant now
  EXPECT_EQ(count_ops(*fixed, "Trilu"), 0);
  // Either way the causal blocks fuse: from the Trilu chain, or from the folded constant.
  EXPECT_EQ(count_ops(*generic, "Attention", "octet"), 2);
  EXPECT_EQ(count_ops(*fixed, "Attention", "octet"), 2);
  EXPECT_EQ(specialized.detail("octet.Attention(causal)"), 2);

  NamedTensors in = token_ids(1, 16);
  EXPECT_LE(testing::max_relative_error(testing::run_graph(fixed, in), testing::run_graph(original, in)), 1e-5);
  // Other sizes are now refused with the usual input error.
  EXPECT_THROW(testing::run_graph(fixed, token_ids(1, 8)), Error);
}

TEST(BindSymbols, UnboundSymbolsStaySymbolic) {
  std::shared_ptr<Graph> g = load("bert_tiny");
  bind_symbols(*g, {{"seq", 8}});
  EXPECT_EQ(dims_to_string(*g->outputs()[0]->type.dims), "[batch,8,64]");
  EXPECT_THROW(bind_symbols(*g, {{"batch", -1}}), Error);
}

}  // namespace
}  // namespace octet
