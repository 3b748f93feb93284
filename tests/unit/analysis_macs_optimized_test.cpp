// MAC counts must not change when the optimizer fuses a MatMul and its bias into
// octet.MatMulBias: inspect --optimized reports the same work as the original model.
#include <gtest/gtest.h>

#include "analysis/macs.h"
#include "onnx/model_io.h"
#include "ops/infer.h"
#include "passes/pipeline.h"

namespace octet {
namespace {

std::optional<int64_t> total_macs(const Graph& g, const Bindings& bindings) {
  Dim total = 0;
  for (const Node* n : g.nodes())
    if (auto m = node_macs(*n)) total = total + *m;
  return total.substitute(bindings).constant();
}

TEST(MacsOptimized, FusedModelsCountTheSameMacs) {
  const Bindings bindings = {{"batch", 2}, {"seq", 16}};
  for (const char* name : {"bert_tiny.onnx", "gpt2_tiny.onnx", "vit_tiny.onnx"}) {
    Model model = load_model(std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/" + name);
    const auto before = total_macs(*model.graph, bindings);
    OptimizeReport report = optimize(*model.graph);
    ASSERT_TRUE(before.has_value()) << name;
    EXPECT_GT(*before, 0) << name;
    EXPECT_EQ(total_macs(*model.graph, bindings), before) << name << ": " << report.to_text();
  }
}

TEST(MacsOptimized, ConvTransposeCountsEveryInputTimesItsFilters) {
  // The DINOv2 decoder's first stage: 16x16x384 -> 32x32x256, kernel 4, stride 2, pads 1;
  // folding the BatchNormalization after it keeps the count.
  Graph g;
  g.opset_imports[""] = 14;
  g.add_input("x", TensorType(DType::Float32, DimVector{Dim::symbol("batch"), 384, 16, 16}));
  g.add_initializer("w", std::make_shared<Tensor>(DType::Float32, std::vector<int64_t>{384, 256, 4, 4}));
  for (const char* p : {"s", "b", "m", "v"})
    g.add_initializer(p, std::make_shared<Tensor>(Tensor::from_vector<float>({256}, std::vector<float>(256, 1.0f))));
  g.add_node("ConvTranspose", {"x", "w"}, {"y"},
             {Attribute::make_ints("strides", {2, 2}), Attribute::make_ints("pads", {1, 1, 1, 1})}, "", "up");
  g.add_node("BatchNormalization", {"y", "s", "b", "m", "v"}, {"z"}, {}, "", "bn");
  g.mark_output(g.value("z"));
  infer_graph(g);
  const Bindings batch2 = {{"batch", 2}};
  EXPECT_EQ(total_macs(g, batch2), int64_t{2} * 384 * 16 * 16 * 256 * 4 * 4);
  optimize(g);
  EXPECT_EQ(total_macs(g, batch2), int64_t{2} * 384 * 16 * 16 * 256 * 4 * 4);
}

}  // namespace
}  // namespace octet
