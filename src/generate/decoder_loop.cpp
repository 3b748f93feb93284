#include "generate/decoder_loop.h"

#include <algorithm>
#include <chrono>

#include "octet/error.h"

namespace octet::generate {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
}  // namespace

std::string stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::MaxNewTokens: return "max_new_tokens";
    case StopReason::StopToken: return "stop_token";
    case StopReason::Callback: return "callback";
  }
  return "?";
}

void check_generation_config(const GenerationConfig& config) {
  check_sampling_options(config.sampling);
  if (config.max_new_tokens < 1) fail("max_new_tokens must be >= 1, got ", config.max_new_tokens);
}

GenerationOutput generate_decoder_only(DecoderRunner& runner, const std::vector<int64_t>& prompt,
                                       const GenerationConfig& config, const TokenCallback& on_token) {
  if (prompt.empty()) fail("the prompt is empty: a decoder-only model needs at least one token to start from");
  DecoderStep step;
  step.tokens = prompt;
  return generate_from(runner, std::move(step), prompt, config, on_token);
}

GenerationOutput generate_from(DecoderRunner& runner, DecoderStep step, std::vector<int64_t> context,
                               const GenerationConfig& config, const TokenCallback& on_token) {
  check_generation_config(config);
  if (step.batch != 1) fail("generation runs one sequence at a time (batch 1), got a first step of batch ", step.batch);
  const Clock::time_point start = Clock::now();
  runner.reset();
  runner.reserve(static_cast<int64_t>(step.tokens.size()) + config.max_new_tokens);
  TokenSampler sampler(config.sampling);
  GenerationOutput out;
  out.timings.prompt_tokens = static_cast<int64_t>(step.tokens.size());
  Clock::time_point first_token;
  while (true) {
    Tensor logits_tensor = runner.step(step);
    const float* data = logits_tensor.data<float>();
    std::vector<float> logits(data, data + logits_tensor.numel());
    const int64_t token = sampler.next(logits, context);
    if (out.tokens.empty()) {
      first_token = Clock::now();
      out.timings.time_to_first_token_ms = ms_since(start);
    }
    out.tokens.push_back(token);
    context.push_back(token);
    const bool go_on = !on_token || on_token(token);
    if (std::find(config.stop_token_ids.begin(), config.stop_token_ids.end(), token) != config.stop_token_ids.end()) {
      out.stop_reason = StopReason::StopToken;
      break;
    }
    if (!go_on) {
      out.stop_reason = StopReason::Callback;
      break;
    }
    if (static_cast<int64_t>(out.tokens.size()) >= config.max_new_tokens) break;
    step.tokens = {token};
  }
  GenerationTimings& t = out.timings;
  t.new_tokens = static_cast<int64_t>(out.tokens.size());
  t.decode_ms = ms_since(first_token);
  t.total_ms = ms_since(start);
  if (t.new_tokens > 1 && t.decode_ms > 0) t.decode_tokens_per_second = (t.new_tokens - 1) / (t.decode_ms / 1000.0);
  return out;
}

}  // namespace octet::generate
