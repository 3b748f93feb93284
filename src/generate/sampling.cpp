#include "generate/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_set>

#include "octet/error.h"

namespace octet::generate {

namespace {
constexpr float kRemoved = -std::numeric_limits<float>::infinity();
}  // namespace

void check_sampling_options(const SamplingOptions& o) {
  if (!(o.temperature > 0) || !std::isfinite(o.temperature))
    fail("temperature must be a finite number > 0, got ", o.temperature);
  if (o.top_k < 0) fail("top_k must be >= 0 (0: off), got ", o.top_k);
  if (!(o.top_p > 0 && o.top_p <= 1)) fail("top_p must be in (0, 1] (1: off), got ", o.top_p);
  if (!(o.repetition_penalty > 0) || !std::isfinite(o.repetition_penalty))
    fail("repetition_penalty must be a finite number > 0 (1: off), got ", o.repetition_penalty);
}

void apply_repetition_penalty(std::vector<float>& logits, const std::vector<int64_t>& context, float penalty) {
  if (penalty == 1.0f) return;
  std::unordered_set<int64_t> seen;
  const int64_t vocab = static_cast<int64_t>(logits.size());
  for (int64_t token : context) {
    if (token < 0 || token >= vocab) fail("token id ", token, " is outside the vocabulary of ", vocab);
    if (!seen.insert(token).second) continue;
    float& l = logits[static_cast<size_t>(token)];
    l = l < 0 ? l * penalty : l / penalty;
  }
}

void apply_temperature(std::vector<float>& logits, float temperature) {
  if (temperature == 1.0f) return;
  for (float& l : logits) l /= temperature;
}

void keep_top_k(std::vector<float>& logits, int64_t k) {
  if (k <= 0 || k >= static_cast<int64_t>(logits.size())) return;
  std::vector<float> sorted = logits;
  std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(), std::greater<float>());
  const float kth = sorted[static_cast<size_t>(k - 1)];
  for (float& l : logits)
    if (l < kth) l = kRemoved;
}

void keep_top_p(std::vector<float>& logits, float p) {
  if (p >= 1.0f || logits.empty()) return;
  std::vector<size_t> order(logits.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] < logits[b]; });
  const std::vector<float> logp = log_softmax(logits);
  double cumulative = 0;
  // The last (most likely) token is always kept, as transformers' min_tokens_to_keep=1.
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    cumulative += std::exp(static_cast<double>(logp[order[i]]));
    if (cumulative <= 1.0 - p) logits[order[i]] = kRemoved;
    else break;  // cumulative only grows
  }
}

int64_t argmax(const std::vector<float>& logits) {
  if (logits.empty()) fail("no logits to choose a token from");
  return static_cast<int64_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

std::vector<int64_t> argmax_rows(const std::vector<float>& logits, int64_t batch) {
  if (batch < 1 || logits.size() % static_cast<size_t>(batch) != 0)
    fail(logits.size(), " logits do not split into ", batch, " rows");
  const size_t vocab = logits.size() / static_cast<size_t>(batch);
  if (vocab == 0) fail("no logits to choose a token from");
  std::vector<int64_t> out;
  for (int64_t r = 0; r < batch; ++r) {
    const auto row = logits.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(r) * vocab);
    out.push_back(std::max_element(row, row + static_cast<std::ptrdiff_t>(vocab)) - row);
  }
  return out;
}

std::vector<float> log_softmax(const std::vector<float>& logits) {
  const float max = *std::max_element(logits.begin(), logits.end());
  std::vector<float> out(logits.size());
  if (!std::isfinite(max)) fail("the logits hold no finite value (every token removed, or NaN)");
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - max));
  const float log_sum = static_cast<float>(std::log(sum));
  for (size_t i = 0; i < logits.size(); ++i) out[i] = logits[i] - max - log_sum;
  return out;
}

TokenSampler::TokenSampler(const SamplingOptions& options) : options_(options), rng_(options.seed) {
  check_sampling_options(options);
}

int64_t TokenSampler::next(std::vector<float>& logits, const std::vector<int64_t>& context) {
  apply_repetition_penalty(logits, context, options_.repetition_penalty);
  if (!options_.do_sample) return argmax(logits);
  apply_temperature(logits, options_.temperature);
  keep_top_k(logits, options_.top_k);
  keep_top_p(logits, options_.top_p);
  return draw(logits);
}

int64_t TokenSampler::draw(const std::vector<float>& logits) {
  const std::vector<float> logp = log_softmax(logits);
  // A uniform double in [0, 1) from 53 random bits: the same on every platform, unlike
  // std::uniform_real_distribution.
  const double u = static_cast<double>(rng_() >> 11) * (1.0 / 9007199254740992.0);
  double cumulative = 0;
  int64_t last = -1;
  for (size_t i = 0; i < logp.size(); ++i) {
    if (logp[i] == kRemoved) continue;
    cumulative += std::exp(static_cast<double>(logp[i]));
    last = static_cast<int64_t>(i);
    if (u < cumulative) return last;
  }
  return last;  // rounding left the sum just under 1
}

}  // namespace octet::generate
