// MAC counts must not change when the optimizer fuses a MatMul and its bias into
// octet.MatMulBias: inspect --optimized reports the same work as the original model.
#include <gtest/gtest.h>

#include "analysis/macs.h"
#include "onnx/model_io.h"
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

}  // namespace
}  // namespace octet
