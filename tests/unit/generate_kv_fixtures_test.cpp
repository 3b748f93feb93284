// Decoders exported with past (tests/models/export_generation_fixtures.py: tiny Llama with GQA
// and RoPE, tiny GPT-2) against onnxruntime on the unfused files
// (make_decoder_references.py: a 7-token prefill and 8 greedy decode steps):
//   - the optimized graph (octet.GroupedAttention) through a plain Session, fed
//     onnxruntime's own presents as past: logits and present.N.* of every step;
//   - the in-place runner (octet.CachedAttention over its own caches): the last logits of
//     every step, the tokens of the steps fed in.
// Tolerance: 1e-4 of the largest reference magnitude (fused attention rounds differently).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "cpu_test_util.h"
#include "generate/in_place_kv_runner.h"
#include "io/npy.h"
#include "onnx/model_io.h"
#include "pass_test_util.h"
#include "passes/pipeline.h"

namespace octet {
namespace {

constexpr int kSteps = 9;  // the prefill and 8 decode steps

std::string fixture(const std::string& name) { return std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/" + name; }

std::shared_ptr<Graph> load(const std::string& name) {
  return std::shared_ptr<Graph>(load_model(fixture(name + ".onnx")).graph);
}

std::map<std::string, Tensor> references(const std::string& name) {
  std::map<std::string, Tensor> out;
  for (auto& [k, v] : read_npz(fixture(name + "_steps.npz"))) out[k] = v;
  return out;
}

using testing::max_relative_error;

std::string step_key(int step, const std::string& name) { return "step" + std::to_string(step) + "." + name; }

class KvFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(KvFixture, FusedSessionMatchesOnnxruntimeStepByStep) {
  const std::string name = GetParam();
  auto g = load(name);
  const int before = static_cast<int>(g->node_count());
  OptimizeReport report = optimize(*g);
  std::cout << name << ": " << report.to_text();
  EXPECT_EQ(testing::count_ops(*g, "GroupedAttention", "octet"), 2) << name;
  EXPECT_EQ(testing::count_ops(*g, "Softmax"), 0) << name;
  EXPECT_LT(static_cast<int>(g->node_count()), before);
  Session session{std::shared_ptr<const Graph>(g)};
  auto ref = references(name);
  for (int step = 0; step < kSteps; ++step) {
    NamedTensors in;
    for (const Value* v : g->inputs()) {
      if (v->is_initializer()) continue;
      const std::string& n = v->name();
      if (n.rfind("past_key_values.", 0) == 0) {
        if (step == 0) {
          const DimVector& d = *v->type.dims;
          in.emplace_back(n, Tensor(DType::Float32, {1, *d[1].constant(), 0, *d[3].constant()}));
        } else {
          in.emplace_back(n, ref.at(step_key(step - 1, "present." + n.substr(16))));
        }
      } else {
        in.emplace_back(n, ref.at(step_key(step, n)));
      }
    }
    NamedTensors out = session.run(in);
    for (const auto& [n, t] : out)
      EXPECT_LT(max_relative_error(t, ref.at(step_key(step, n))), 1e-4) << name << " step " << step << " output " << n;
  }
}

TEST_P(KvFixture, InPlaceRunnerMatchesOnnxruntimeStepByStep) {
  const std::string name = GetParam();
  std::string why;
  auto runner = generate::make_in_place_runner(load(name), SessionOptions{}, &why);
  ASSERT_TRUE(runner) << why;
  auto ref = references(name);
  for (int round = 0; round < 2; ++round) {  // the second after reset(): the caches are reused
    for (int step = 0; step < kSteps; ++step) {
      const Tensor& ids = ref.at(step_key(step, "input_ids"));
      generate::DecoderStep s;
      s.tokens.assign(ids.data<int64_t>(), ids.data<int64_t>() + ids.numel());
      Tensor logits = runner->step(s);
      const Tensor& all = ref.at(step_key(step, "logits"));
      const int64_t vocab = all.shape()[2], n = all.shape()[1];
      Tensor want(DType::Float32, {1, vocab});
      std::copy_n(all.data<float>() + (n - 1) * vocab, vocab, want.mutable_data<float>());
      EXPECT_LT(max_relative_error(logits, want), 1e-4) << name << " round " << round << " step " << step;
    }
    EXPECT_EQ(runner->cached_tokens(), 15);
    runner->reset();
  }
}

TEST_P(KvFixture, InPlaceRunnerReordersRows) {
  // Two rows of the same prompt, then row 1 dropped and row 0 doubled: every row must still
  // continue as the single-row run does.
  const std::string name = GetParam();
  auto runner = generate::make_in_place_runner(load(name), SessionOptions{});
  ASSERT_TRUE(runner);
  auto ref = references(name);
  const Tensor& ids = ref.at(step_key(0, "input_ids"));
  generate::DecoderStep s;
  s.batch = 2;
  s.tokens.assign(ids.data<int64_t>(), ids.data<int64_t>() + ids.numel());
  s.tokens.insert(s.tokens.end(), s.tokens.begin(), s.tokens.end());
  runner->step(s);
  runner->reorder_rows({0, 0, 1});
  const Tensor& next = ref.at(step_key(1, "input_ids"));
  s.batch = 3;
  s.tokens.assign(3, next.data<int64_t>()[0]);
  Tensor logits = runner->step(s);
  const Tensor& want_all = ref.at(step_key(1, "logits"));
  const int64_t vocab = want_all.shape()[2];
  for (int r = 0; r < 3; ++r) {
    Tensor row(DType::Float32, {1, vocab});
    std::copy_n(logits.data<float>() + r * vocab, vocab, row.mutable_data<float>());
    Tensor want(DType::Float32, {1, vocab});
    std::copy_n(want_all.data<float>(), vocab, want.mutable_data<float>());
    EXPECT_LT(max_relative_error(row, want), 1e-4) << name << " row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Decoders, KvFixture, ::testing::Values("llama_gen_with_past", "gpt2_gen_with_past"));

TEST(InPlaceRunner, RefusesAGraphWithoutAttentionWithPast) {
  std::string why;
  auto runner = generate::make_in_place_runner(
      std::shared_ptr<Graph>(load_model(fixture("gpt2_tiny.onnx")).graph), SessionOptions{}, &why);
  EXPECT_FALSE(runner);
  EXPECT_NE(why.find("GroupedAttention"), std::string::npos) << why;
}

}  // namespace
}  // namespace octet
