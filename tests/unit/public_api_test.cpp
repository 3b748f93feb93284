// The public C++ API (include/octet/octet.h) as a user sees it: only public headers here
// (plus the ONNX builders of onnx_test_util.h for malformed models).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "octet/octet.h"
#include "onnx_test_util.h"

namespace {

namespace fs = std::filesystem;
using octet::testing::TempDir;

const std::string kBert = std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/bert_tiny.onnx";

struct BertInputs {
  std::vector<int64_t> ids, mask, types;
  octet::NamedTensors tensors;
  BertInputs(int64_t batch, int64_t seq, int64_t seed) {
    const size_t n = static_cast<size_t>(batch * seq);
    for (size_t i = 0; i < n; ++i) ids.push_back(static_cast<int64_t>((i * 31 + seed * 7) % 100));
    mask.assign(n, 1);
    types.assign(n, 0);
    using octet::ElementType;
    tensors = {{"input_ids", octet::Tensor::view(ElementType::Int64, {batch, seq}, ids.data())},
               {"attention_mask", octet::Tensor::view(ElementType::Int64, {batch, seq}, mask.data())},
               {"token_type_ids", octet::Tensor::view(ElementType::Int64, {batch, seq}, types.data())}};
  }
};

TEST(PublicApi, SessionDescribesAndRunsTheModel) {
  octet::Session session(kBert, {.threads = 1, .optimization_level = 2});
  ASSERT_EQ(session.inputs().size(), 3u);
  const octet::TensorInfo ids = session.inputs()[0];
  EXPECT_EQ(ids.name, "input_ids");
  EXPECT_EQ(ids.type, octet::ElementType::Int64);
  ASSERT_TRUE(ids.rank_known);
  EXPECT_EQ(ids.shape[0].symbol, "batch");
  EXPECT_FALSE(ids.shape[1].known());
  BertInputs in(2, 7, 0);
  EXPECT_TRUE(in.tensors[0].second.is_view());
  EXPECT_EQ(in.tensors[0].second.data(), in.ids.data());  // zero-copy
  const octet::NamedTensors out = session.run(in.tensors, {"logits"});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, "logits");
  EXPECT_EQ(out[0].second.describe(), "float32[2,2]");
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::isfinite(out[0].second.data_as<float>()[i]));
  EXPECT_THROW(out[0].second.data_as<int64_t>(), octet::Error);
}

// Optimization levels and loading from bytes change nothing in what the model computes.
TEST(PublicApi, LevelsAndBytesAgree) {
  BertInputs in(1, 9, 3);
  const octet::NamedTensors reference = octet::Session(kBert, {.threads = 1, .optimization_level = 0}).run(in.tensors);
  const std::string bytes = octet::testing::read_file(kBert);
  octet::Model model = octet::Model::load_bytes(bytes.data(), bytes.size(), ".", "bert_tiny (bytes)");
  const size_t before = model.node_count();
  const octet::OptimizeSummary summary = model.optimize(2);
  EXPECT_EQ(summary.nodes_before, static_cast<int64_t>(before));
  EXPECT_LT(summary.nodes_after, summary.nodes_before);
  EXPECT_NE(summary.json.find("passes"), std::string::npos);
  const octet::NamedTensors fused = octet::Session(std::move(model), {.threads = 1}).run(in.tensors);
  ASSERT_EQ(fused.size(), reference.size());
  for (size_t o = 0; o < fused.size(); ++o) {
    ASSERT_EQ(fused[o].second.shape(), reference[o].second.shape());
    const float* a = fused[o].second.data_as<float>();
    const float* b = reference[o].second.data_as<float>();
    for (int64_t i = 0; i < fused[o].second.element_count(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4f + 1e-4f * std::fabs(b[i]));
  }
  EXPECT_THROW(model.inputs(), octet::Error);  // moved into the session
}

TEST(PublicApi, ErrorsNameFileNodeAndReason) {
  try {
    octet::Session("/nonexistent/model.onnx");
    FAIL() << "no error";
  } catch (const octet::Error& e) {
    EXPECT_EQ(e.file(), "/nonexistent/model.onnx");
    EXPECT_EQ(e.node(), "");
    EXPECT_NE(e.reason().find("cannot open"), std::string::npos) << e.reason();
    EXPECT_EQ(std::string(e.what()).rfind("/nonexistent/model.onnx: ", 0), 0u) << e.what();
  }
  TempDir dir;
  onnx::ModelProto m = octet::testing::make_model();
  auto* g = m.mutable_graph();
  octet::testing::add_input(g, "x", onnx::TensorProto::FLOAT, {2});
  octet::testing::add_node(g, "Add", {"x", "nowhere"}, {"y"}, "broken_add");
  octet::testing::add_output(g, "y", onnx::TensorProto::FLOAT, {2});
  const std::string path = octet::testing::save_proto(m, dir / "bad.onnx").string();
  try {
    octet::Model::load(path);
    FAIL() << "no error";
  } catch (const octet::Error& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.node(), "broken_add");
    EXPECT_NE(e.reason().find("input 1 'nowhere' is not defined"), std::string::npos) << e.reason();
  }
  octet::Session session(kBert);
  BertInputs in(1, 4, 0);
  in.tensors.pop_back();
  try {
    session.run(in.tensors);
    FAIL() << "no error";
  } catch (const octet::Error& e) {
    EXPECT_EQ(e.file(), kBert);
    EXPECT_NE(e.reason().find("'token_type_ids'"), std::string::npos) << e.reason();
  }
  EXPECT_THROW(session.run(in.tensors, {"no_such_output"}), octet::Error);
  EXPECT_THROW(octet::Tensor::view(octet::ElementType::Float32, {-1, 2}, in.ids.data()), octet::Error);
  EXPECT_THROW(octet::Session(kBert, {.threads = 1, .optimization_level = 3}), octet::Error);
}

class CountingSamples : public octet::CalibrationSource {
 public:
  explicit CountingSamples(int n) : n_(n) {}
  bool next(octet::NamedTensors& sample) override {
    if (given_ == n_) return false;
    BertInputs in(1, 6 + given_, given_);
    for (auto& [name, t] : in.tensors) sample.emplace_back(name, octet::Tensor::copy(t.type(), t.shape(), t.data()));
    ++given_;
    return true;
  }
  int given_ = 0;

 private:
  int n_;
};

TEST(PublicApi, QuantizeFromACallerSource) {
  TempDir dir;
  const std::string out = (dir / "int8.onnx").string();
  CountingSamples samples(6);
  octet::QuantizeOptions options;  // static, SmoothQuant auto: the defaults
  std::vector<std::string> stages;
  const octet::QuantizeReport r = octet::quantize(kBert, out, options, &samples, [&](const std::string& stage, size_t, size_t) {
    if (stages.empty() || stages.back() != stage) stages.push_back(stage);
  });
  EXPECT_EQ(samples.given_, 6);
  EXPECT_EQ(r.calibration_samples, 5u);
  EXPECT_EQ(r.eval_samples, 1u);
  EXPECT_EQ(r.calibration_source, "6 samples from the caller's CalibrationSource");
  EXPECT_GT(r.int8_mac_share, 0.9);
  EXPECT_FALSE(r.layers.empty());
  ASSERT_FALSE(r.fidelity.empty());
  EXPECT_GT(r.fidelity[0].cosine, 0.98);
  EXPECT_NE(r.json.find("\"coverage\""), std::string::npos);
  ASSERT_GE(stages.size(), 2u);
  EXPECT_EQ(stages[0], "reading samples");
  // SmoothQuant auto (the static default) looks at channel statistics before calibrating.
  EXPECT_EQ(stages[1], "channel statistics");
  EXPECT_NE(std::find(stages.begin(), stages.end(), "calibrating"), stages.end());
  EXPECT_NE(r.json.find("\"smoothing\""), std::string::npos);
  EXPECT_TRUE(fs::exists(out));
  // The quantized file runs through the same API.
  BertInputs in(1, 8, 1);
  EXPECT_EQ(octet::Session(out).run(in.tensors, {"logits"})[0].second.describe(), "float32[1,2]");
}

TEST(PublicApi, QuantizeRejectsBadRequests) {
  TempDir dir;
  const std::string out = (dir / "int8.onnx").string();
  CountingSamples none(0);
  EXPECT_THROW(octet::quantize(kBert, out, {}, &none), octet::Error);
  octet::QuantizeOptions bad_mode;
  bad_mode.mode = "sometimes";
  EXPECT_THROW(octet::quantize(kBert, out, bad_mode, nullptr), octet::Error);
  octet::QuantizeOptions dynamic;
  dynamic.mode = "dynamic";
  EXPECT_THROW(octet::quantize(kBert, kBert, dynamic, nullptr), octet::Error);
  octet::QuantizeOptions smooth;
  smooth.smoothquant = "1.5";
  CountingSamples two(2);
  EXPECT_THROW(octet::quantize(kBert, out, smooth, &two), octet::Error);
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
