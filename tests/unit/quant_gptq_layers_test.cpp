// gptq_weights on a real (tiny) BERT: each rounded weight is gptq_round of the float weight
// with the Gram matrix of its input over the samples, of rows in their quantization steps
// exactly when the plan reads that input per token (gptq.h says why), of plain rows otherwise.
#include <gtest/gtest.h>

#include "quant/gptq.h"
#include "quant/quant_params.h"
#include "quant_fixture_util.h"

namespace octet::quant {
namespace {

using quant::testing::kFixtures;
using quant::testing::level1;
using quant::testing::required;

// The rounding gptq_weights should give `node`'s weight: GPTQ with the Gram matrix of its
// input observed here on the samples (rows in steps of `row_steps` or plain) and nearest
// rounding's scales.
std::vector<int8_t> expected_rounding(const Session& session, const Node& node, const CalibrationSource& source,
                                      const std::vector<size_t>& samples, std::optional<DType> row_steps) {
  const Tensor& w = *node.input(1)->constant();
  const int64_t k = w.shape()[0], n = w.shape()[1];
  GramObserver gram(node.input(0)->name(), k, row_steps);
  for (size_t i : samples)
    session.run(source.sample(i), [&](const Value& v, const Tensor& t) {
      if (v.name() == node.input(0)->name()) gram.observe(t);
    });
  const QuantizedWeight nearest = quantize_weight(w, 1, true, "w");
  const std::vector<float> scales(nearest.scale.data<float>(), nearest.scale.data<float>() + nearest.scale.numel());
  return gptq_round(w.data<float>(), k, n, scales, gram.matrix(), gptq_damping(row_steps.has_value()));
}

TEST(GptqLayers, DampingIsTenTimesGptqsForPerTokenLayers) {
  EXPECT_DOUBLE_EQ(gptq_damping(false), 0.01);
  EXPECT_DOUBLE_EQ(gptq_damping(true), 0.1);
}

TEST(GptqLayers, PerTokenInputsGetGramMatricesOfRowsInSteps) {
  std::shared_ptr<Graph> graph = level1("bert_tiny");
  const CalibrationSource source =
      CalibrationSource::open(kFixtures + "bert_tiny_data", input_specs(required(*graph)));
  std::vector<size_t> samples;
  for (size_t i = 0; i < source.size(); ++i) samples.push_back(i);
  const Session session{std::shared_ptr<const Graph>(graph)};
  bool some_differ = false;
  for (auto [per_token, type] : {std::pair{false, DType::UInt8}, {true, DType::UInt8}, {true, DType::Int8}}) {
    QuantizeOptions o;
    o.mode = Mode::Static;
    o.activation_type = type;
    if (per_token) o.per_token = {"MatMul", "Gemm"};
    const QuantizePlan plan = plan_quantization(*graph, o);
    GptqSummary summary;
    const auto prepared = gptq_weights(session, plan, source, samples, true, type, {}, summary);
    size_t checked = 0;
    for (const QuantizedNode& q : plan.nodes) {
      if (q.kind != QuantKind::Weight || q.node->op_type() != "MatMul") continue;
      const Value* w = q.node->input(1);
      auto it = prepared->find(w->name());
      if (it == prepared->end()) continue;
      EXPECT_EQ(q.per_token, per_token) << q.node->name();
      const std::optional<DType> steps = per_token ? std::optional<DType>(type) : std::nullopt;
      const std::vector<int8_t> want = expected_rounding(session, *q.node, source, samples, steps);
      const std::vector<int8_t> got(it->second.data.data<int8_t>(), it->second.data.data<int8_t>() + it->second.data.numel());
      EXPECT_EQ(got, want) << q.node->name() << " per_token " << per_token;
      if (per_token && want != expected_rounding(session, *q.node, source, samples, std::nullopt)) some_differ = true;
      ++checked;
    }
    EXPECT_GT(checked, 3u);
  }
  EXPECT_TRUE(some_differ) << "rows in steps changed no weight: the test would not see them dropped";
}

}  // namespace
}  // namespace octet::quant
