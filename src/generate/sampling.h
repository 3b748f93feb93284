// Choosing the next token from a step's logits: greedy, or sampling with temperature,
// top-k, top-p and a repetition penalty, each rule as transformers defines it (its
// RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper, TopKLogitsWarper and
// TopPLogitsWarper, applied in that order), so a user's settings mean the same here.
//
// Removed tokens get -inf, as transformers' filter_value. The random draw is octet's own
// (a seeded mt19937_64): the same seed gives the same tokens here, never torch's.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace octet::generate {

struct SamplingOptions {
  bool do_sample = false;         // false: greedy (the rules below then do not apply)
  float temperature = 1.0f;       // > 0; logits are divided by it
  int64_t top_k = 0;              // keep the k highest logits (ties with the k-th kept); 0: off
  float top_p = 1.0f;             // keep the smallest set of tokens whose probability reaches p; 1: off
  float repetition_penalty = 1.0f;  // > 0; 1: off. Applies in greedy decoding too
  uint64_t seed = 0;
};

// Throws octet::Error naming the option when a value is out of range.
void check_sampling_options(const SamplingOptions& options);

// transformers' rule: each token already in `context` (counted once) has its logit divided
// by `penalty` when positive, multiplied when negative.
void apply_repetition_penalty(std::vector<float>& logits, const std::vector<int64_t>& context, float penalty);
void apply_temperature(std::vector<float>& logits, float temperature);
// Sets every logit below the k-th largest to -inf (k >= vocab keeps all).
void keep_top_k(std::vector<float>& logits, int64_t k);
// Sorts the probabilities ascending and removes the tokens whose cumulative probability
// is <= 1 - p, always keeping the most likely one.
void keep_top_p(std::vector<float>& logits, float p);

// The first index of the largest logit (torch.argmax's choice on ties).
int64_t argmax(const std::vector<float>& logits);
// argmax of each row of logits [batch, vocab], row-major.
std::vector<int64_t> argmax_rows(const std::vector<float>& logits, int64_t batch);
// log(softmax(logits)), computed stably; -inf stays -inf.
std::vector<float> log_softmax(const std::vector<float>& logits);

class TokenSampler {
 public:
  explicit TokenSampler(const SamplingOptions& options);

  // The next token after `context` (prompt and tokens so far) given the step's logits.
  // `logits` is modified (penalty, temperature, filters).
  int64_t next(std::vector<float>& logits, const std::vector<int64_t>& context);

  // Draws an index with probability softmax(logits)[i] (-inf logits never drawn).
  int64_t draw(const std::vector<float>& logits);

 private:
  SamplingOptions options_;
  std::mt19937_64 rng_;
};

}  // namespace octet::generate
