// SmoothQuant's pieces: per-channel statistics, the scale formula, where each fold goes
// (into a producer that owns its parameters, a copy of it, or an explicit Mul), that no
// shared constant is ever changed, and that the smoothed float graph computes what the
// original did. Plus the mixed-precision search on a synthetic metric.
#include <gtest/gtest.h>

#include <cmath>

#include "onnx/model_io.h"
#include "pass_test_util.h"
#include "quant/channel_stats.h"
#include "quant/mixed_precision.h"
#include "quant/smooth_fold.h"
#include "quant/smoothquant.h"

namespace octet::quant {
namespace {

using octet::testing::count_ops;
using octet::testing::PassGraph;
using octet::testing::ramp;

constexpr int64_t K = 8;

std::vector<float> test_scales() {
  std::vector<float> s;
  for (int64_t j = 0; j < K; ++j) s.push_back(0.25f + 0.6f * static_cast<float>(j));
  return s;
}

SmoothingDecision decision(const std::string& activation, std::vector<std::string> consumers) {
  SmoothingDecision d;
  d.group = {activation, std::move(consumers), K};
  d.smoothed = true;
  d.scale = test_scales();
  return d;
}

// Smooths a fresh graph from `make` and checks it computes what the original does.
std::shared_ptr<Graph> smooth_and_compare(const std::function<std::shared_ptr<Graph>()>& make,
                                          const std::vector<SmoothingDecision>& decisions,
                                          std::vector<SmoothFold>* folds = nullptr) {
  std::shared_ptr<Graph> original = make(), smoothed = make();
  std::vector<SmoothFold> f = apply_smoothing(*smoothed, decisions);
  EXPECT_TRUE(verify_graph(*smoothed).empty());
  const NamedTensors inputs{{"x", ramp(DType::Float32, {2, 3, K}, 1)}};
  EXPECT_LE(octet::testing::max_relative_error(octet::testing::run_graph(smoothed, inputs),
                                               octet::testing::run_graph(original, inputs)),
            1e-5);
  if (folds) *folds = f;
  return smoothed;
}

// x -> LayerNorm -> h -> {MatMul W1, MatMul W2}; with `residual`, h also feeds an Add.
std::shared_ptr<Graph> layer_norm_graph(bool residual) {
  PassGraph b;
  b.input("x", DType::Float32, {2, 3, K});
  b.init("gamma", ramp(DType::Float32, {K}, 2));
  b.init("beta", ramp(DType::Float32, {K}, 3, 0.5f));
  b.init("w1", ramp(DType::Float32, {K, 6}, 4));
  b.init("w2", ramp(DType::Float32, {K, K}, 5));
  b.node("LayerNormalization", {"x", "gamma", "beta"}, {"h"}, {Attribute::make_float("epsilon", 1e-5f)});
  b.node("MatMul", {"h", "w1"}, {"y1"});
  b.node("MatMul", {"h", "w2"}, {"y2"});
  b.output("y1");
  if (residual) {
    b.node("Add", {"h", "y2"}, {"r"});
    b.output("r");
  } else {
    b.output("y2");
  }
  return b.done();
}

TEST(ParseSmoothing, StaticModeDefaultsToAutoAndEverySpellingIsChecked) {
  auto defaulted = parse_smoothing("", Mode::Static, 4);
  ASSERT_TRUE(defaulted.has_value());
  EXPECT_FALSE(defaulted->alpha.has_value());  // auto
  EXPECT_EQ(defaulted->min_outlier_ratio, 4);
  EXPECT_FALSE(parse_smoothing("", Mode::Dynamic, 4).has_value());
  EXPECT_FALSE(parse_smoothing("off", Mode::Static, 4).has_value());
  auto fixed = parse_smoothing("0.5", Mode::Dynamic, 0);
  ASSERT_TRUE(fixed && fixed->alpha);
  EXPECT_EQ(*fixed->alpha, 0.5);
  for (const char* bad : {"1.5", "-0.1", "half", "0.5x", "nan"})
    EXPECT_THROW(parse_smoothing(bad, Mode::Static, 4), Error) << bad;
  EXPECT_THROW(parse_smoothing("auto", Mode::Static, -1), Error);
}

TEST(ChannelStats, PerChannelMinMaxAbsMaxAndOutlierRatio) {
  ChannelStatsObserver o("t", 3, 2);
  o.observe(Tensor::from_vector<float>({2, 3}, {1, -2, 0.5f, -4, 1, NAN}));
  o.observe(Tensor::from_vector<float>({1, 3}, {2, 0, 3}));
  EXPECT_EQ(o.min(), (std::vector<float>{-4, -2, 0.5f}));
  EXPECT_EQ(o.max(), (std::vector<float>{2, 1, 3}));
  EXPECT_EQ(o.abs_max(), (std::vector<float>{4, 2, 3}));
  EXPECT_EQ(o.rows(), 2u);  // reservoir capped at 2 of 3 rows
  EXPECT_EQ(o.rows_seen(), 3u);
  EXPECT_DOUBLE_EQ(outlier_ratio({1, 1, 2, 40}), 40.0 / 2);
  EXPECT_DOUBLE_EQ(outlier_ratio({3, 3, 3}), 1.0);
  EXPECT_THROW(o.observe(Tensor::from_vector<float>({1, 2}, {1, 2})), Error);
}

TEST(SmoothingScales, FollowTheFormulaAndLeaveEmptyChannelsAlone) {
  // s = |x|^a / |w|^(1-a): a = 0.5 -> sqrt(|x| / |w|).
  const std::vector<float> s = smoothing_scales({4, 1, 0, 9}, {1, 4, 2, 0}, 0.5);
  EXPECT_FLOAT_EQ(s[0], 2.0f);
  EXPECT_FLOAT_EQ(s[1], 0.5f);
  EXPECT_FLOAT_EQ(s[2], 1.0f);  // an all-zero activation channel
  EXPECT_FLOAT_EQ(s[3], 1.0f);  // an all-zero weight row
  EXPECT_FLOAT_EQ(smoothing_scales({8}, {2}, 1.0)[0], 8.0f);
  EXPECT_FLOAT_EQ(smoothing_scales({8}, {2}, 0.0)[0], 0.5f);
  EXPECT_THROW(smoothing_scales({1}, {1}, 1.5), Error);
}

TEST(SmoothFold, LayerNormWithOnlyTheGroupReadingItTakesTheScaleInGammaAndBeta) {
  std::vector<SmoothFold> folds;
  auto g = smooth_and_compare([] { return layer_norm_graph(false); }, {decision("h", {"y1_node", "y2_node"})}, &folds);
  ASSERT_EQ(folds.size(), 1u);
  EXPECT_NE(folds[0].where.find("gamma and beta of LayerNormalization"), std::string::npos) << folds[0].where;
  EXPECT_EQ(count_ops(*g, "LayerNormalization"), 1);
  EXPECT_EQ(count_ops(*g, "Mul"), 0);
  EXPECT_EQ(g->find_value("gamma"), nullptr);  // replaced, and nothing else read it
}

TEST(SmoothFold, LayerNormWithAResidualReaderIsCopiedForTheGroupPath) {
  std::vector<SmoothFold> folds;
  auto g = smooth_and_compare([] { return layer_norm_graph(true); }, {decision("h", {"y1_node", "y2_node"})}, &folds);
  EXPECT_NE(folds[0].where.find("a copy of"), std::string::npos) << folds[0].where;
  EXPECT_EQ(count_ops(*g, "LayerNormalization"), 2);
  // The residual still reads the original LayerNorm, with its original gamma.
  const Value* gamma = g->value("gamma");
  EXPECT_EQ(gamma->uses().size(), 1u);
  EXPECT_FLOAT_EQ(gamma->constant()->data<float>()[1], ramp(DType::Float32, {K}, 2).data<float>()[1]);
}

// The story-5 pattern: GeLU's scalar 0.5 shared by two GeLUs; the second GeLU's output
// feeds a smoothed matmul. The scalar cannot take a per-channel scale and is shared, so
// an explicit Mul goes in and the constant keeps its value for both readers.
TEST(SmoothFold, SharedScalarConstantIsNeverReshapedOrChanged) {
  auto make = [] {
    PassGraph b;
    b.input("x", DType::Float32, {2, 3, K});
    b.scalar("half", 0.5f);
    b.init("w0", ramp(DType::Float32, {K, K}, 6));
    b.init("w1", ramp(DType::Float32, {K, 4}, 7));
    b.node("MatMul", {"x", "w0"}, {"a"});
    b.node("Tanh", {"a"}, {"t"});
    b.node("Mul", {"a", "t"}, {"at"});
    b.node("Mul", {"at", "half"}, {"gelu1"});
    b.node("Mul", {"x", "half"}, {"gelu2"});
    b.node("MatMul", {"gelu1", "w1"}, {"y"});
    b.output("y");
    b.output("gelu2");
    return b.done();
  };
  std::vector<SmoothFold> folds;
  auto g = smooth_and_compare(make, {decision("gelu1", {"y_node"})}, &folds);
  EXPECT_NE(folds[0].where.find("explicit Mul"), std::string::npos) << folds[0].where;
  EXPECT_NE(folds[0].where.find("not one value per channel"), std::string::npos) << folds[0].where;
  const Value* half = g->value("half");
  EXPECT_EQ(half->constant()->rank(), 0);
  EXPECT_FLOAT_EQ(half->constant()->data<float>()[0], 0.5f);
  EXPECT_EQ(half->uses().size(), 2u);
}

TEST(SmoothFold, SharedGammaIsClonedNotMutated) {
  auto make = [] {
    PassGraph b;
    b.input("x", DType::Float32, {2, 3, K});
    b.init("gamma", ramp(DType::Float32, {K}, 2));
    b.init("w1", ramp(DType::Float32, {K, 5}, 4));
    b.node("LayerNormalization", {"x", "gamma"}, {"h"});
    b.node("LayerNormalization", {"x", "gamma"}, {"h2"});
    b.node("MatMul", {"h", "w1"}, {"y"});
    b.output("y");
    b.output("h2");
    return b.done();
  };
  auto g = smooth_and_compare(make, {decision("h", {"y_node"})});
  const Value* gamma = g->value("gamma");
  ASSERT_EQ(gamma->uses().size(), 1u);
  EXPECT_EQ(gamma->uses()[0].node->output(0)->name(), "h2");
  EXPECT_FLOAT_EQ(gamma->constant()->data<float>()[3], ramp(DType::Float32, {K}, 2).data<float>()[3]);
}

TEST(SmoothFold, PrecedingGemmTakesTheScaleInItsOutputChannelsAndBias) {
  auto make = [] {
    PassGraph b;
    b.input("x", DType::Float32, {6, K});
    b.init("wt", ramp(DType::Float32, {K, K}, 8));  // [N, K] under transB
    b.init("c", ramp(DType::Float32, {K}, 9));
    b.init("w1", ramp(DType::Float32, {K, 3}, 10));
    b.node("Gemm", {"x", "wt", "c"}, {"h"}, {Attribute::make_int("transB", 1)});
    b.node("MatMul", {"h", "w1"}, {"y"});
    b.output("y");
    return b.done();
  };
  std::vector<SmoothFold> folds;
  // The test input is [2, 3, K]; Gemm needs 2-D, so feed it through a graph of its own.
  std::shared_ptr<Graph> original = make(), smoothed = make();
  folds = apply_smoothing(*smoothed, {decision("h", {"y_node"})});
  EXPECT_NE(folds[0].where.find("output channels of Gemm"), std::string::npos) << folds[0].where;
  EXPECT_EQ(count_ops(*smoothed, "Mul"), 0);
  const NamedTensors inputs{{"x", ramp(DType::Float32, {6, K}, 1)}};
  EXPECT_LE(octet::testing::max_relative_error(octet::testing::run_graph(smoothed, inputs),
                                               octet::testing::run_graph(original, inputs)),
            1e-5);
}

TEST(SmoothFold, LayerNormWrittenOutFoldsIntoItsMulAndAdd) {
  auto make = [] {
    PassGraph b;
    b.input("x", DType::Float32, {2, 3, K});
    b.init("g", ramp(DType::Float32, {1, K}, 11));
    b.init("bias", ramp(DType::Float32, {K}, 12));
    b.init("w1", ramp(DType::Float32, {K, 4}, 13));
    b.node("Tanh", {"x"}, {"n"});
    b.node("Mul", {"n", "g"}, {"m"});
    b.node("Add", {"m", "bias"}, {"h"});
    b.node("MatMul", {"h", "w1"}, {"y"});
    b.output("y");
    return b.done();
  };
  std::vector<SmoothFold> folds;
  auto g = smooth_and_compare(make, {decision("h", {"y_node"})}, &folds);
  EXPECT_NE(folds[0].where.find("Mul 'm_node'"), std::string::npos) << folds[0].where;
  EXPECT_NE(folds[0].where.find("bias of Add 'h_node'"), std::string::npos) << folds[0].where;
  EXPECT_EQ(count_ops(*g, "Mul"), 1);
}

TEST(SmoothFold, ActivationFromAnotherActivationGetsAnExplicitMul) {
  auto make = [] {
    PassGraph b;
    b.input("x", DType::Float32, {2, 3, K});
    b.init("w1", ramp(DType::Float32, {K, 4}, 13));
    b.node("Relu", {"x"}, {"h"});
    b.node("MatMul", {"h", "w1"}, {"y"});
    b.output("y");
    b.output("h");
    return b.done();
  };
  auto g = smooth_and_compare(make, {decision("h", {"y_node"})});
  EXPECT_EQ(count_ops(*g, "Mul"), 1);
}

TEST(SmoothGroups, BertGroupsShareOneScaleOverQkv) {
  Model m = load_model(std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/bert_tiny.onnx");
  OptimizeOptions o;
  o.level = 1;
  optimize(*m.graph, o);
  const QuantizePlan plan = plan_quantization(*m.graph, {});
  const std::vector<SmoothGroup> groups = find_smooth_groups(*m.graph, plan);
  ASSERT_EQ(groups.size(), 10u);  // per layer: QKV, attention out, FFN in, FFN out; pooler; classifier
  EXPECT_EQ(groups[0].consumers.size(), 3u);
  EXPECT_EQ(groups[0].channels, 64);
}

// Each layer adds a known drop; the search must keep exactly the layers needed.
TEST(MixedPrecision, KeepsTheFewestLayersThatMeetTheTarget) {
  const std::map<std::string, double> cost{{"a", 0.001}, {"b", 0.02}, {"c", 0.004}, {"d", 0.03}, {"e", 0.0005}};
  std::vector<std::string> layers;
  for (const auto& [name, c] : cost) layers.push_back(name);
  auto drop = [&](const std::set<std::string>& float_layers) {
    double d = 0;
    for (const auto& [name, c] : cost) d += float_layers.count(name) ? 0 : c;
    return d;
  };
  MixedPrecisionResult r = search_mixed_precision(layers, drop, 0.006);
  ASSERT_TRUE(r.met);
  ASSERT_EQ(r.float_layers.size(), 2u);
  EXPECT_EQ(r.float_layers[0].node, "d");
  EXPECT_EQ(r.float_layers[1].node, "b");
  EXPECT_NEAR(r.final_drop, 0.0055, 1e-12);
  EXPECT_NEAR(r.drop_all_int8, 0.0555, 1e-12);

  r = search_mixed_precision(layers, drop, 0.1);  // already met: nothing kept float
  EXPECT_TRUE(r.met);
  EXPECT_TRUE(r.float_layers.empty());
  EXPECT_EQ(r.evaluations, 1u);

  r = search_mixed_precision(layers, drop, 0.0);  // only all-float meets 0
  EXPECT_TRUE(r.met);
  EXPECT_EQ(r.float_layers.size(), layers.size());
}

TEST(MixedPrecision, MetricDropPerMetric) {
  OutputFidelity a{"last_hidden_state", 0.995, 0.1, 0.002, std::nullopt, 2};
  OutputFidelity b{"logits", 0.999, 0.05, 0.004, 0.9, 2};
  EXPECT_NEAR(metric_drop({a, b}, Metric::Cosine), 0.005, 1e-12);
  EXPECT_NEAR(metric_drop({a, b}, Metric::Top1), 0.1, 1e-12);
  EXPECT_NEAR(metric_drop({a, b}, Metric::Mse), 0.004, 1e-12);
  EXPECT_THROW(metric_drop({a}, Metric::Top1), Error);
  EXPECT_THROW(parse_metric("f1"), Error);
}

}  // namespace
}  // namespace octet::quant
