// SmolLM2-135M exported with past (bench/models/exports.py smollm2 ->
// ~/.cache/octet/exports/smollm2/smollm2_with_past.onnx; skipped when it is not built):
// the fused graph (30 octet.GroupedAttention, one per layer) and the in-place runner
// against octet's unfused graph, which the issue checked against onnxruntime's greedy
// tokens. A 16-token prompt, then 8 greedy decode steps: the logits of every step (1e-4 of
// the largest magnitude), the presents of the Session path, the same tokens.
// bench/decode_step.py compares the greedy tokens with onnxruntime's directly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "generate/in_place_kv_runner.h"
#include "onnx/model_io.h"
#include "pass_test_util.h"
#include "passes/pipeline.h"

namespace octet {
namespace {

std::string smollm2_path() {
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/.cache/octet/exports/smollm2/smollm2_with_past.onnx";
}

double rel_error(const float* got, const float* want, int64_t n) {
  double diff = 0, mag = 1e-12;
  for (int64_t i = 0; i < n; ++i) {
    diff = std::max(diff, double(std::fabs(got[i] - want[i])));
    mag = std::max(mag, double(std::fabs(want[i])));
  }
  return diff / mag;
}

// Runs a Session the portable way (presents fed back), returning each step's last logits.
struct PortableLoop {
  explicit PortableLoop(std::shared_ptr<Graph> g) : session(std::shared_ptr<const Graph>(g)) {
    for (const Value* v : session.required_inputs())
      if (v->name().rfind("past_key_values.", 0) == 0)
        past[v->name()] = Tensor(DType::Float32, {1, *(*v->type.dims)[1].constant(), 0, *(*v->type.dims)[3].constant()});
  }
  NamedTensors step(const std::vector<int64_t>& ids) {
    const int64_t s = static_cast<int64_t>(ids.size()), total = cached + s;
    std::vector<int64_t> pos(static_cast<size_t>(s));
    for (int64_t i = 0; i < s; ++i) pos[i] = cached + i;
    NamedTensors in = {{"input_ids", Tensor::from_vector<int64_t>({1, s}, ids)},
                       {"attention_mask", Tensor::from_vector<int64_t>({1, total}, std::vector<int64_t>(total, 1))},
                       {"position_ids", Tensor::from_vector<int64_t>({1, s}, pos)}};
    for (const auto& [n, t] : past) in.emplace_back(n, t);
    NamedTensors out = session.run(in);
    for (const auto& [n, t] : out)
      if (n.rfind("present.", 0) == 0) past["past_key_values." + n.substr(8)] = t;
    cached = total;
    return out;
  }
  Session session;
  std::map<std::string, Tensor> past;
  int64_t cached = 0;
};

TEST(SmolLM2WithPast, FusedAndInPlaceMatchTheUnfusedGraph) {
#if defined(__SANITIZE_ADDRESS__)
  // 30 layers of a 135M model take minutes under ASan; the tiny decoders
  // (generate_kv_fixtures_test) run the same fusion and kernels there.
  GTEST_SKIP() << "a real-size model: run in the Release build";
#endif
  const std::string path = smollm2_path();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is not built (python3 bench/models/exports.py smollm2)";
  auto plain = std::shared_ptr<Graph>(load_model(path).graph);
  auto fused = std::shared_ptr<Graph>(load_model(path).graph);
  const OptimizeReport report = optimize(*fused);
  std::cout << "smollm2_with_past: " << report.to_text();
  EXPECT_EQ(testing::count_ops(*fused, "GroupedAttention", "octet"), 30);
  std::string why;
  auto runner = generate::make_in_place_runner(std::shared_ptr<Graph>(load_model(path).graph), SessionOptions{}, &why);
  ASSERT_TRUE(runner) << why;
  PortableLoop want(plain), got(fused);

  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 16; ++i) ids.push_back((i * 37 + 11) % 251);
  for (int step = 0; step < 9; ++step) {
    NamedTensors w = want.step(ids), g = got.step(ids);
    generate::DecoderStep s;
    s.tokens = ids;
    const Tensor last = runner->step(s);
    const Tensor& logits = w[0].second;
    const int64_t vocab = logits.shape()[2];
    const float* want_last = logits.data<float>() + logits.numel() - vocab;
    EXPECT_LT(rel_error(last.data<float>(), want_last, vocab), 1e-4) << "in-place runner, step " << step;
    for (size_t i = 0; i < w.size(); ++i)
      EXPECT_LT(rel_error(g[i].second.data<float>(), w[i].second.data<float>(), w[i].second.numel()), 1e-4)
          << "fused session, step " << step << ", " << w[i].first;
    const int64_t next = std::max_element(want_last, want_last + vocab) - want_last;
    EXPECT_EQ(std::max_element(last.data<float>(), last.data<float>() + vocab) - last.data<float>(), next)
        << "step " << step;
    ids = {next};
  }
}

}  // namespace
}  // namespace octet
