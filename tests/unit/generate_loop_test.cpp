// The generation loops on a scripted DecoderRunner (no model): what they feed each step,
// when they stop, the callback, and beam search's bookkeeping against transformers'
// BeamHypotheses rules worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "generate/beam_search.h"
#include "generate/decoder_loop.h"
#include "octet/error.h"

namespace octet::generate {
namespace {

// Logits that make (last token + 1) % vocab the most likely next token, so greedy
// generation counts upward; records every step it was given.
class CountingRunner : public DecoderRunner {
 public:
  explicit CountingRunner(int64_t vocab) : vocab_(vocab) {}
  Tensor step(const DecoderStep& step) override {
    steps.push_back(step.tokens);
    cached_ += static_cast<int64_t>(step.tokens.size()) / step.batch;
    std::vector<float> logits(static_cast<size_t>(vocab_), 0.0f);
    logits[static_cast<size_t>((step.tokens.back() + 1) % vocab_)] = 5.0f;
    return Tensor::from_vector<float>({1, vocab_}, logits);
  }
  int64_t cached_tokens() const override { return cached_; }
  void reorder_rows(const std::vector<int64_t>&) override {}
  void reset() override {
    cached_ = 0;
    ++resets;
  }
  std::vector<std::vector<int64_t>> steps;
  int resets = 0;

 private:
  int64_t vocab_, cached_ = 0;
};

TEST(GenerateLoop, PrefillsThePromptThenFeedsOneTokenPerStep) {
  CountingRunner runner(10);
  GenerationConfig config;
  config.max_new_tokens = 4;
  const GenerationOutput out = generate_decoder_only(runner, {3, 4}, config);
  EXPECT_EQ(out.tokens, (std::vector<int64_t>{5, 6, 7, 8}));
  EXPECT_EQ(out.stop_reason, StopReason::MaxNewTokens);
  EXPECT_EQ(runner.steps, (std::vector<std::vector<int64_t>>{{3, 4}, {5}, {6}, {7}}));
  EXPECT_EQ(runner.resets, 1);
  EXPECT_EQ(out.timings.prompt_tokens, 2);
  EXPECT_EQ(out.timings.new_tokens, 4);
  EXPECT_GE(out.timings.total_ms, out.timings.time_to_first_token_ms);
}

TEST(GenerateLoop, StopsAfterAStopTokenAndKeepsIt) {
  CountingRunner runner(10);
  GenerationConfig config;
  config.max_new_tokens = 20;
  config.stop_token_ids = {9, 7};
  const GenerationOutput out = generate_decoder_only(runner, {4}, config);
  EXPECT_EQ(out.tokens, (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(out.stop_reason, StopReason::StopToken);
}

TEST(GenerateLoop, TheCallbackSeesEachTokenAndCanStop) {
  CountingRunner runner(10);
  GenerationConfig config;
  config.max_new_tokens = 20;
  std::vector<int64_t> seen;
  const GenerationOutput out = generate_decoder_only(runner, {0}, config, [&](int64_t t) {
    seen.push_back(t);
    return seen.size() < 3;
  });
  EXPECT_EQ(seen, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(out.tokens, seen);
  EXPECT_EQ(out.stop_reason, StopReason::Callback);
  EXPECT_EQ(runner.steps.size(), 3u);  // no step after the stop
}

TEST(GenerateLoop, RejectsAnEmptyPromptAndBadLimits) {
  CountingRunner runner(10);
  GenerationConfig config;
  EXPECT_THROW(generate_decoder_only(runner, {}, config), Error);
  config.max_new_tokens = 0;
  EXPECT_THROW(generate_decoder_only(runner, {1}, config), Error);
}

TEST(GenerateBeamHypotheses, KeepsTheBestNumBeamsByLengthPenalizedScore) {
  BeamHypotheses h(2, 1.0f, EarlyStopping::Heuristic, 10);
  h.add({1, 2}, -4.0, 2);  // score -2
  h.add({1, 3, 4}, -3.0, 3);  // score -1
  EXPECT_EQ(h.size(), 2u);
  h.add({1, 5}, -5.0, 2);  // -2.5: worse than the worst kept (-2), dropped
  EXPECT_EQ(h.size(), 2u);
  h.add({1, 6}, -3.0, 2);  // -1.5: replaces -2
  EXPECT_EQ(h.size(), 2u);
  EXPECT_EQ(h.best(), (std::vector<int64_t>{1, 3, 4}));
  // Heuristic: done when the worst kept (-1.5) >= best running sum / current length.
  EXPECT_TRUE(h.is_done(-4.0, 3, 1));   // -4 / 2 = -2
  EXPECT_FALSE(h.is_done(-2.0, 3, 1));  // -2 / 2 = -1
}

TEST(GenerateBeamHypotheses, EarlyStoppingModes) {
  BeamHypotheses always(1, 1.0f, EarlyStopping::Always, 10);
  EXPECT_FALSE(always.is_done(-100.0, 3, 1));  // nothing finished yet
  always.add({1}, -9.0, 1);
  EXPECT_TRUE(always.is_done(0.0, 3, 1));
  // Never, length_penalty > 0: the best running beam is judged at max_length (10 - 1 = 9).
  BeamHypotheses never(1, 1.0f, EarlyStopping::Never, 10);
  never.add({1}, -1.0, 1);  // score -1
  EXPECT_TRUE(never.is_done(-9.0, 3, 1));    // -9 / 9 = -1 <= -1
  EXPECT_FALSE(never.is_done(-8.0, 3, 1));   // -8 / 9 > -1
  // length_penalty 2: score = sum / length^2.
  BeamHypotheses squared(1, 2.0f, EarlyStopping::Heuristic, 10);
  squared.add({1, 2}, -8.0, 2);  // -2
  EXPECT_TRUE(squared.is_done(-8.0, 3, 1));   // -8 / 4 = -2
  EXPECT_FALSE(squared.is_done(-7.0, 3, 1));  // -1.75
}

}  // namespace
}  // namespace octet::generate
