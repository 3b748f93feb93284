// gather_quantized_rows on what the quantizer writes for exporter fixtures (torch.onnx.export
// BERT and GPT-2): with the fold budget below the embedding tables' size, as for a real
// vocabulary, level 2 leaves no DequantizeLinear in front of a Gather, and the outputs
// equal those of the default pipeline, which folds the (tiny) tables to float: the rewrite
// is exact, so they agree bit for bit.
#include <gtest/gtest.h>

#include <cstring>

#include "passes/pipeline.h"
#include "quant_fixture_util.h"
#include "runtime/session.h"

namespace octet::quant {
namespace {

using testing::fixture_inputs;

// The fixtures' tables are tiny; a real vocabulary is over min_embedding_bytes and quantized.
std::shared_ptr<Graph> quantized(const std::string& name) {
  QuantizeOptions every_table;
  every_table.min_embedding_bytes = 0;
  return testing::quantize_static(name, every_table);
}

int gathers_of_dequantized(const Graph& g) {
  int n = 0;
  for (const Node* node : g.nodes())
    if (node->op_type() == "Gather" && node->input(0)->producer() &&
        node->input(0)->producer()->op_type() == "DequantizeLinear")
      ++n;
  return n;
}

void expect_rows_gathered_exactly(const std::string& name, int tables) {
  auto folded = quantized(name);
  ASSERT_EQ(gathers_of_dequantized(*folded), tables) << name << ": the quantizer's embedding form";
  auto gathered = quantized(name);
  optimize(*folded);  // default budget: these small tables are folded to float
  OptimizeOptions small_budget;
  small_budget.fold_max_bytes = 256;  // as a real vocabulary: too large to fold (bert_tiny token types: 512 B)
  const OptimizeReport report = optimize(*gathered, small_budget);
  EXPECT_EQ(gathers_of_dequantized(*gathered), 0) << name;
  EXPECT_EQ(report.detail("Gather(int8 rows)"), tables) << name;
  const NamedTensors inputs = fixture_inputs(name, *folded);
  const NamedTensors want = Session(std::shared_ptr<const Graph>(folded)).run(inputs);
  const NamedTensors got = Session(std::shared_ptr<const Graph>(gathered)).run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].second.bytes(), want[i].second.bytes()) << name << " " << want[i].first;
    EXPECT_EQ(std::memcmp(got[i].second.raw(), want[i].second.raw(), want[i].second.bytes()), 0)
        << name << " " << want[i].first;
  }
}

TEST(GatherQuantizedRowsFixtures, BertEmbeddings) { expect_rows_gathered_exactly("bert_tiny", 3); }
TEST(GatherQuantizedRowsFixtures, Gpt2Embeddings) { expect_rows_gathered_exactly("gpt2_tiny", 2); }

}  // namespace
}  // namespace octet::quant
