// gather_quantized_rows on what the quantizer writes for exporter fixtures (torch.onnx.export
// BERT and GPT-2): with the fold budget below the embedding tables' size, as for a real
// vocabulary, level 2 leaves no DequantizeLinear in front of a Gather, and the outputs
// equal those of the default pipeline, which folds the (tiny) tables to float: the rewrite
// is exact, so they agree bit for bit.
#include <gtest/gtest.h>

#include <cstring>

#include "onnx/model_io.h"
#include "passes/pipeline.h"
#include "quant/calibrate.h"
#include "quant/calibration_data.h"
#include "quant/qdq_rewrite.h"
#include "quant/quantize_plan.h"
#include "runtime/session.h"

namespace octet::quant {
namespace {

const std::string kFixtures = std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/";

std::shared_ptr<Graph> level1(const std::string& name) {
  Model m = load_model(kFixtures + name + ".onnx");
  OptimizeOptions o;
  o.level = 1;
  optimize(*m.graph, o);
  return std::shared_ptr<Graph>(std::move(m.graph));
}

std::vector<const Value*> required(const Graph& g) {
  std::vector<const Value*> v;
  for (const Value* i : g.inputs())
    if (!i->is_initializer()) v.push_back(i);
  return v;
}

// Static W8A8 with int8 embeddings, calibrated on the fixture's ONNX test data.
std::shared_ptr<Graph> quantized(const std::string& name) {
  auto graph = level1(name);
  std::shared_ptr<const Graph> float_graph = level1(name);
  auto source = CalibrationSource::open(kFixtures + name + "_data", input_specs(required(*float_graph)));
  const QuantizeOptions o;
  QuantizePlan plan = plan_quantization(*graph, o);
  std::vector<std::string> names;
  for (const Value* v : plan.activations) names.push_back(v->name());
  CalibrationResult c = calibrate(float_graph, names, source, {0}, o);
  write_quantized_graph(*graph, plan, c.table(), o);
  return graph;
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
  const NamedTensors inputs =
      CalibrationSource::open(kFixtures + name + "_data", input_specs(required(*folded))).sample(0);
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
