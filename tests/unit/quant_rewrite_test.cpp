// The quantizer's graph side on the exporter fixtures, without the CLI: plan -> calibrate
// -> rewrite gives standard Q/DQ that octet's level-2 optimizer lowers to octet.QMatMul /
// octet.QAttention, and the lowered int8 graph computes what the Q/DQ graph computes
// (run on reference kernels) and stays close to float. Plus the target profile checker on
// graphs built to break each rule.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "analysis/model_summary.h"
#include "onnx/model_io.h"
#include "passes/pipeline.h"
#include "quant/calibrate.h"
#include "quant_fixture_util.h"
#include "quant/target_profile.h"
#include "runtime/session.h"

namespace octet::quant {
namespace {

using testing::fixture_inputs;
using testing::kFixtures;
using testing::level1;
using testing::quantize_static;
using testing::required;

double cosine(const Tensor& a, const Tensor& b) {
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  double d = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) d += double(x[i]) * y[i], na += double(x[i]) * x[i], nb += double(y[i]) * y[i];
  return d / std::sqrt(na * nb);
}

TEST(QuantPlan, BertCoversEveryMatmulAndEmbedding) {
  auto g = level1("bert_tiny");
  QuantizeOptions every_table;  // bert_tiny's tables are all under the 1 MiB default
  every_table.min_embedding_bytes = 0;
  QuantizePlan plan = plan_quantization(*g, every_table);
  int weights = 0, activations = 0, embeddings = 0;
  for (const QuantizedNode& q : plan.nodes)
    (q.kind == QuantKind::Weight ? weights : q.kind == QuantKind::Activation ? activations : embeddings)++;
  EXPECT_EQ(weights, 14);  // 2 layers x 6 Linear, pooler and classifier Gemm
  EXPECT_EQ(activations, 4);  // Q.K^T and P.V per layer
  EXPECT_EQ(embeddings, 3);   // word, position, token type
  QuantizeOptions keep = every_table;
  keep.quantize_attention = false;
  keep.exclude = {"Gemm"};
  QuantizePlan partial = plan_quantization(*g, keep);
  EXPECT_EQ(partial.nodes.size(), 12u + 3u);
  EXPECT_EQ(partial.skipped.size(), 4u + 2u);
}

TEST(QuantPlan, AttentionOperandsAreQKAndVNotTheProbabilities) {
  auto g = level1("bert_tiny");
  const QuantizePlan plan = plan_quantization(*g, QuantizeOptions{});
  const std::set<std::string> operands = attention_operands(plan);
  EXPECT_EQ(operands.size(), 6u);  // Q, K^T and V of each of the 2 layers
  int probabilities = 0;
  for (const QuantizedNode& q : plan.nodes) {
    if (q.kind != QuantKind::Activation) continue;
    for (int slot : q.activation_inputs) {
      const Value* in = q.node->input(static_cast<size_t>(slot));
      const bool is_p = in->producer() && in->producer()->op_type() == "Softmax";
      probabilities += is_p;
      EXPECT_EQ(operands.count(in->name()), is_p ? 0u : 1u) << q.node->name() << " input " << slot;
    }
  }
  EXPECT_EQ(probabilities, 2);  // P of each layer's P.V: its range is [0, 1] by definition
}

TEST(QuantCalibration, AttentionOperandsKeepTheirObservedRange) {
  CalibrationResult r;
  CalibratedTensor clipped;  // as entropy would leave it: [-2, 3] of an observed [-4, 6]
  clipped.min = -4, clipped.max = 6, clipped.lo = -2, clipped.hi = 3;
  clipped.params = {5.0f / 255.0f, 102, DType::UInt8};
  r.tensors["q"] = clipped;
  r.tensors["v"] = clipped;
  keep_observed_range(r, {"q", "absent"}, QuantizeOptions{});
  const CalibratedTensor& q = r.tensors.at("q");
  EXPECT_EQ(q.lo, -4.0f);
  EXPECT_EQ(q.hi, 6.0f);
  EXPECT_FLOAT_EQ(q.params.scale, 10.0f / 255.0f);  // uint8 over [-4, 6]: zero point 255 * 4 / 10 = 102
  EXPECT_EQ(q.params.zero_point, 102);
  const CalibratedTensor& v = r.tensors.at("v");  // not named: untouched
  EXPECT_EQ(v.lo, -2.0f);
  EXPECT_FLOAT_EQ(v.params.scale, 5.0f / 255.0f);
  EXPECT_EQ(r.tensors.count("absent"), 0u);
}

TEST(QuantPlan, SmallEmbeddingTablesStayFloat) {
  auto g = level1("bert_tiny");
  QuantizeOptions o;
  int64_t largest = 0;
  for (const Node* n : g->nodes())
    if (n->op_type() == "Gather" && n->input(0)->constant())
      largest = std::max<int64_t>(largest, n->input(0)->constant()->bytes());
  ASSERT_GT(largest, 0);
  o.min_embedding_bytes = static_cast<size_t>(largest);  // only the largest table reaches the bound
  QuantizePlan plan = plan_quantization(*g, o);
  int embeddings = 0, small = 0;
  for (const QuantizedNode& q : plan.nodes) embeddings += q.kind == QuantKind::Embedding;
  for (const auto& s : plan.skipped) small += s.reason.find("small table kept float") != std::string::npos;
  EXPECT_EQ(embeddings, 1);
  EXPECT_EQ(small, 2);
}

// The lowered int8 graph against the Q/DQ graph it came from on reference kernels: both
// compute the same integer products, so only float rounding (and a rare flip of a
// quantized value at a rounding boundary) separates them.
// On the ort target P has 255 levels (uint8) and the graph is onnxruntime's QDQ; on the
// octet target P has 4095 (int16, opset 21).
void expect_lowering_matches(const std::string& name, int qmatmuls, int qattentions, Target target) {
  QuantizeOptions o;
  o.target = target;
  auto qdq = quantize_static(name, o);
  EXPECT_TRUE(check_target_profile(*qdq, target).empty());
  int int16_probabilities = 0;
  for (const Node* n : qdq->nodes())
    if (n->op_type() == "QuantizeLinear" && n->input(2) && n->input(2)->type.dtype == DType::Int16) ++int16_probabilities;
  EXPECT_EQ(int16_probabilities, target == Target::Octet ? qattentions : 0) << name;
  EXPECT_EQ(qdq->opset_version(""), target == Target::Octet ? 21 : 17) << name;
  const NamedTensors inputs = fixture_inputs(name, *qdq);
  SessionOptions ref;
  ref.kernels = KernelChoice::Reference;
  const NamedTensors want = Session(std::shared_ptr<const Graph>(qdq), ref).run(inputs);

  auto lowered = quantize_static(name, o);
  optimize(*lowered);
  const auto ops = octet_op_counts(*lowered);
  EXPECT_EQ(ops.count("octet.QMatMul") ? ops.at("octet.QMatMul") : 0, qmatmuls) << name;
  EXPECT_EQ(ops.count("octet.QAttention") ? ops.at("octet.QAttention") : 0, qattentions) << name;
  for (const Node* n : lowered->nodes()) EXPECT_NE(n->op_type(), "MatMul") << name << ": " << n->describe();
  const NamedTensors got = Session(std::shared_ptr<Graph>(lowered)).run(inputs);
  std::shared_ptr<const Graph> float_graph = level1(name);
  const NamedTensors fp32 = Session(float_graph).run(inputs);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_GT(cosine(want[i].second, got[i].second), 0.9999) << name << " " << want[i].first;
    EXPECT_GT(cosine(fp32[i].second, got[i].second), 0.99) << name << " " << want[i].first;
  }
}

// 14 weight matmuls, of which each layer's Q, K and V become one packed QMatMul
// (fuse_qattention_qkv): 14 - 2 * 2.
TEST(QuantLowering, BertInt8GraphMatchesItsQdqForm) {
  expect_lowering_matches("bert_tiny", 10, 2, Target::Ort);
  expect_lowering_matches("bert_tiny", 10, 2, Target::Octet);
}
TEST(QuantLowering, Gpt2Int8GraphMatchesItsQdqForm) {
  expect_lowering_matches("gpt2_tiny", 9, 2, Target::Ort);
  expect_lowering_matches("gpt2_tiny", 9, 2, Target::Octet);
}

TEST(QuantLowering, DynamicOctetWritesQMatMulThatRuns) {
  auto g = level1("bert_tiny");
  QuantizeOptions o;
  o.mode = Mode::Dynamic;
  RewriteResult r = write_quantized_graph(*g, plan_quantization(*g, o), {}, o);
  EXPECT_EQ(r.dynamic_matmuls, 14);
  EXPECT_EQ(octet_op_counts(*g).at("octet.QMatMul"), 14);
  EXPECT_FALSE(check_target_profile(*g, Target::Ort).empty());  // octet-domain ops
  const NamedTensors inputs = fixture_inputs("bert_tiny", *g);
  const NamedTensors got = Session(std::shared_ptr<Graph>(g)).run(inputs);
  const NamedTensors fp32 = Session(std::shared_ptr<const Graph>(level1("bert_tiny"))).run(inputs);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_GT(cosine(fp32[i].second, got[i].second), 0.99);
}

// --per-token in static mode: the named MatMuls read their input quantized per row at run
// time (QMatMul with dynamic_type), need no calibrated range, and the rest stays static.
TEST(QuantLowering, PerTokenInputsInAStaticModel) {
  QuantizeOptions o;
  o.per_token = {"MatMul"};  // the 12 Linear MatMuls; the pooler/classifier Gemms stay static
  auto planned = level1("bert_tiny");
  const QuantizePlan plan = plan_quantization(*planned, o);
  int per_token = 0;
  for (const QuantizedNode& q : plan.nodes) {
    if (!q.per_token) continue;
    ++per_token;
    EXPECT_EQ(q.node->op_type(), "MatMul");
    EXPECT_TRUE(q.activation_inputs.empty());
    for (const Value* v : plan.activations) EXPECT_NE(v, q.node->input(0)) << "calibrated: " << v->name();
  }
  EXPECT_EQ(per_token, 12);
  auto g = quantize_static("bert_tiny", o);
  int dynamic = 0;
  for (const Node* n : g->nodes()) dynamic += n->op_type() == "QMatMul" && n->find_attr("dynamic_type") != nullptr;
  EXPECT_EQ(dynamic, 12);
  const NamedTensors inputs = fixture_inputs("bert_tiny", *g);
  optimize(*g);  // the static Gemms and attention lower to octet's int8 ops beside the per-token QMatMuls
  const NamedTensors got = Session(std::shared_ptr<Graph>(g)).run(inputs);
  const NamedTensors fp32 = Session(std::shared_ptr<const Graph>(level1("bert_tiny"))).run(inputs);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_GT(cosine(fp32[i].second, got[i].second), 0.99);

  for (Target t : {Target::Ort, Target::TensorRT}) {
    QuantizeOptions other = o;
    other.target = t;
    if (t == Target::TensorRT) other.activation_type = DType::Int8;
    try {
      check_target_options(other, false);
      ADD_FAILURE() << "--per-token accepted for " << target_name(t);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--per-token needs --target octet"), std::string::npos) << e.what();
    }
  }
}

TEST(QuantWeights, PerChannelSymmetricInt8) {
  Tensor w = Tensor::from_vector<float>({2, 3}, {1.0f, -0.5f, 0.25f, -2.0f, 0.0f, 4.0f});
  QuantizedWeight q = quantize_weight(w, 1, true, "w");  // columns: max|.| 2, 0.5, 4
  ASSERT_EQ(q.scale.shape(), (std::vector<int64_t>{3}));
  EXPECT_FLOAT_EQ(q.scale.data<float>()[0], 2.0f / 127);
  EXPECT_FLOAT_EQ(q.scale.data<float>()[2], 4.0f / 127);
  const int8_t* d = q.data.data<int8_t>();
  EXPECT_EQ(d[0], 64);    // 1 / (2/127) = 63.5 -> 64 (half to even)
  EXPECT_EQ(d[1], -127);  // -0.5 is its column's max
  EXPECT_EQ(d[3], -127);
  EXPECT_EQ(d[5], 127);
  QuantizedWeight t = quantize_weight(w, 1, false, "w");
  EXPECT_EQ(t.scale.numel(), 1);
  EXPECT_FLOAT_EQ(t.scale.data<float>()[0], 4.0f / 127);
}

// A graph with one node per TensorRT rule it breaks.
TEST(TargetProfile, TensorRTRulesNameTheNodeAndRule) {
  Graph g;
  g.opset_imports[""] = 17;
  g.add_input("x", TensorType(DType::Float32, DimVector{Dim(2), Dim(4)}));
  g.add_initializer("s", std::make_shared<Tensor>(Tensor::scalar<float>(0.1f)));
  g.add_initializer("z_u8", std::make_shared<Tensor>(Tensor::scalar<uint8_t>(128)));
  g.add_initializer("z_s8", std::make_shared<Tensor>(Tensor::scalar<int8_t>(3)));
  g.add_initializer("w", std::make_shared<Tensor>(Tensor(DType::Int8, {4, 3})));
  g.add_initializer("ws", std::make_shared<Tensor>(Tensor::from_vector<float>({4}, {1, 1, 1, 1})));
  g.add_initializer("wz", std::make_shared<Tensor>(Tensor(DType::Int8, {4})));
  g.add_node("QuantizeLinear", {"x", "s", "z_u8"}, {"q"}, {}, "", "asym_u8");
  g.add_node("QuantizeLinear", {"x", "s", "z_s8"}, {"q2"}, {}, "", "nonzero_zp");
  g.add_node("DequantizeLinear", {"q2", "s"}, {"x2"}, {}, "", "no_zp");
  g.add_node("DynamicQuantizeLinear", {"x"}, {"dq", "dqs", "dqz"}, {}, "", "dynamic");
  g.add_node("DequantizeLinear", {"w", "ws", "wz"}, {"wf"}, {Attribute::make_int("axis", 0)}, "", "wrong_axis");
  g.add_node("MatMul", {"x2", "wf"}, {"y"}, {}, "", "mm");
  g.mark_output(g.value("y"));
  g.mark_output(g.value("q"));
  g.mark_output(g.value("dq"));
  infer_graph(g);
  const std::vector<std::string> p = check_target_profile(g, Target::TensorRT);
  auto has = [&](const std::string& node, const std::string& words) {
    for (const std::string& line : p)
      if (line.find("'" + node + "'") != std::string::npos && line.find(words) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("asym_u8", "int8 tensor of zeros")) << ::testing::PrintToString(p);
  EXPECT_TRUE(has("nonzero_zp", "symmetric")) << ::testing::PrintToString(p);
  EXPECT_TRUE(has("no_zp", "uint8")) << ::testing::PrintToString(p);
  EXPECT_TRUE(has("dynamic", "--mode static")) << ::testing::PrintToString(p);
  EXPECT_TRUE(has("wrong_axis", "axis 0")) << ::testing::PrintToString(p);
  EXPECT_TRUE(check_target_profile(g, Target::Octet).empty());

  QuantizeOptions trt;
  trt.target = Target::TensorRT;
  trt.mode = Mode::Dynamic;
  try {
    check_target_options(trt, false);
    FAIL() << "tensorrt + dynamic accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no dynamic quantization"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace octet::quant
