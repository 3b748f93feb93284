// Generation with a decoder-only model: prefill the prompt in one step, then one token per
// step until a stop token, max_new_tokens, or the caller's callback says stop.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "generate/decoder_runner.h"
#include "generate/sampling.h"

namespace octet::generate {

struct GenerationConfig {
  SamplingOptions sampling;
  int64_t max_new_tokens = 32;
  // Generation stops after producing any of these (the stop token is kept in the output,
  // as transformers keeps its eos).
  std::vector<int64_t> stop_token_ids;
};

struct GenerationTimings {
  int64_t prompt_tokens = 0;
  int64_t new_tokens = 0;
  double time_to_first_token_ms = 0;  // from the call to the first new token (prefill + choice)
  double decode_ms = 0;               // from the first new token to the last
  double decode_tokens_per_second = 0;  // (new_tokens - 1) / decode time; 0 with fewer than 2
  double total_ms = 0;
};

enum class StopReason { MaxNewTokens, StopToken, Callback };
std::string stop_reason_name(StopReason reason);  // "max_new_tokens", "stop_token", "callback"

struct GenerationOutput {
  std::vector<int64_t> tokens;  // the new tokens only
  GenerationTimings timings;
  StopReason stop_reason = StopReason::MaxNewTokens;
};

// Called with each new token as soon as it is chosen; returning false stops generation
// (the token is kept).
using TokenCallback = std::function<bool(int64_t token)>;

void check_generation_config(const GenerationConfig& config);

// Runs `first_step` on `runner` (reset first), then generates one token per step, batch 1.
// `context` is what the repetition penalty looks at (the tokens so far). Both loops
// (decoder-only, seq2seq greedy/sampling) are this with different first steps.
GenerationOutput generate_from(DecoderRunner& runner, DecoderStep first_step, std::vector<int64_t> context,
                               const GenerationConfig& config, const TokenCallback& on_token);

// Runs `runner` (reset first) on `prompt`, then generates. Batch 1.
GenerationOutput generate_decoder_only(DecoderRunner& runner, const std::vector<int64_t>& prompt,
                                       const GenerationConfig& config, const TokenCallback& on_token = {});

}  // namespace octet::generate
