// The sampling rules of src/generate/sampling.h on values worked out by hand from
// transformers' definitions (RepetitionPenalty, Temperature, TopK, TopP).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "generate/sampling.h"
#include "octet/error.h"

namespace octet::generate {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(GenerateSampling, RepetitionPenaltyDividesPositiveMultipliesNegativeOncePerToken) {
  std::vector<float> logits = {2.0f, -2.0f, 1.0f, 0.5f};
  apply_repetition_penalty(logits, {0, 1, 1}, 2.0f);  // token 1 twice: penalized once
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -4.0f, 1.0f, 0.5f}));
  EXPECT_THROW(apply_repetition_penalty(logits, {4}, 2.0f), Error);  // outside the vocabulary
}

TEST(GenerateSampling, TemperatureDivides) {
  std::vector<float> logits = {2.0f, -4.0f};
  apply_temperature(logits, 0.5f);
  EXPECT_EQ(logits, (std::vector<float>{4.0f, -8.0f}));
}

TEST(GenerateSampling, TopKKeepsTiesWithTheKth) {
  std::vector<float> logits = {1, 3, 2, 3, 0};
  keep_top_k(logits, 2);  // the 2nd largest is 3: both 3s stay
  EXPECT_EQ(logits, (std::vector<float>{-kInf, 3, -kInf, 3, -kInf}));
  logits = {1, 3, 2, 3, 0};
  keep_top_k(logits, 3);
  EXPECT_EQ(logits, (std::vector<float>{-kInf, 3, 2, 3, -kInf}));
  logits = {1, 3};
  keep_top_k(logits, 5);  // k >= vocab: nothing removed
  EXPECT_EQ(logits, (std::vector<float>{1, 3}));
}

std::vector<float> logs(const std::vector<float>& probs) {
  std::vector<float> out;
  for (float p : probs) out.push_back(std::log(p));
  return out;
}

TEST(GenerateSampling, TopPRemovesTheLeastLikelyWhileTheirSumIsAtMostOneMinusP) {
  // Ascending probabilities 0.1 0.2 0.3 0.4: cumulative 0.1 0.3 0.6 1.0.
  std::vector<float> logits = logs({0.2f, 0.4f, 0.1f, 0.3f});
  keep_top_p(logits, 0.5f);  // remove cumulative <= 0.5: 0.1 and 0.2
  EXPECT_EQ(logits[0], -kInf);
  EXPECT_EQ(logits[2], -kInf);
  EXPECT_FLOAT_EQ(logits[1], std::log(0.4f));
  EXPECT_FLOAT_EQ(logits[3], std::log(0.3f));
  logits = logs({0.2f, 0.4f, 0.1f, 0.3f});
  keep_top_p(logits, 0.8f);  // remove <= 0.2: only 0.1
  EXPECT_EQ(logits[2], -kInf);
  EXPECT_GT(logits[0], -kInf);
  logits = logs({0.2f, 0.4f, 0.1f, 0.3f});
  keep_top_p(logits, 0.01f);  // remove <= 0.99: all but the most likely, which always stays
  EXPECT_EQ(logits[0], -kInf);
  EXPECT_EQ(logits[2], -kInf);
  EXPECT_EQ(logits[3], -kInf);
  EXPECT_FLOAT_EQ(logits[1], std::log(0.4f));
}

TEST(GenerateSampling, ArgmaxTakesTheFirstOfEqualMaxima) {
  EXPECT_EQ(argmax({1, 5, 5}), 1);
  EXPECT_EQ(argmax({-kInf, -3, -kInf}), 1);
  EXPECT_THROW(argmax({}), Error);
}

TEST(GenerateSampling, LogSoftmax) {
  const std::vector<float> out = log_softmax({0.0f, std::log(3.0f), -kInf});
  EXPECT_NEAR(out[0], std::log(0.25f), 1e-6);
  EXPECT_NEAR(out[1], std::log(0.75f), 1e-6);
  EXPECT_EQ(out[2], -kInf);
  EXPECT_THROW(log_softmax({-kInf, -kInf}), Error);
}

TEST(GenerateSampling, GreedyAppliesTheRepetitionPenaltyOnly) {
  SamplingOptions o;
  o.repetition_penalty = 1.2f;
  o.temperature = 0.1f;  // ignored without do_sample
  TokenSampler sampler(o);
  std::vector<float> logits = {3.0f, 2.9f};
  EXPECT_EQ(sampler.next(logits, {0}), 1);  // 3 / 1.2 = 2.5 < 2.9
  logits = {3.0f, 2.9f};
  EXPECT_EQ(sampler.next(logits, {1}), 0);
}

TEST(GenerateSampling, DrawsByProbabilityAndNeverARemovedToken) {
  SamplingOptions o;
  o.do_sample = true;
  o.seed = 7;
  TokenSampler sampler(o);
  int ones = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ones += sampler.draw(logs({0.2f, 0.8f})) == 1;
  EXPECT_NEAR(static_cast<double>(ones) / n, 0.8, 0.015);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(sampler.draw({-kInf, 0.5f, -kInf}), 1);
}

TEST(GenerateSampling, TheSameSeedGivesTheSameTokens) {
  SamplingOptions o;
  o.do_sample = true;
  o.top_k = 3;
  o.top_p = 0.9f;
  o.temperature = 0.7f;
  auto run = [&](uint64_t seed) {
    o.seed = seed;
    TokenSampler sampler(o);
    std::vector<int64_t> tokens;
    for (int i = 0; i < 50; ++i) {
      std::vector<float> logits = {0.1f, 0.5f, 0.3f, 0.2f, 0.4f};
      tokens.push_back(sampler.next(logits, {}));
    }
    return tokens;
  };
  EXPECT_EQ(run(3), run(3));
  EXPECT_NE(run(3), run(4));
  // top_k 3 keeps only tokens 1, 4 and 2.
  for (int64_t t : run(5)) EXPECT_TRUE(t == 1 || t == 4 || t == 2) << t;
}

TEST(GenerateSampling, OutOfRangeOptionsNameTheOption) {
  auto message = [](SamplingOptions o) {
    try {
      check_sampling_options(o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  SamplingOptions o;
  o.temperature = 0;
  EXPECT_NE(message(o).find("temperature"), std::string::npos);
  o = {};
  o.top_p = 0;
  EXPECT_NE(message(o).find("top_p"), std::string::npos);
  o.top_p = 1.5f;
  EXPECT_NE(message(o).find("top_p"), std::string::npos);
  o = {};
  o.top_k = -1;
  EXPECT_NE(message(o).find("top_k"), std::string::npos);
  o = {};
  o.repetition_penalty = 0;
  EXPECT_NE(message(o).find("repetition_penalty"), std::string::npos);
  EXPECT_EQ(message(SamplingOptions{}), "");
}

}  // namespace
}  // namespace octet::generate
