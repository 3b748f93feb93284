// Text generation with decoder models exported with a KV cache in optimum's naming
// (past_key_values.N.* in, present.N.* out): greedy, sampling and, for encoder-decoder
// models, beam search. Token ids in, token ids out; tokenizing is the caller's (octet's
// Python package does it with Hugging Face `tokenizers`).
//
//   octet::Generator gen("smollm2_with_past.onnx", {.threads = 2});
//   octet::GenerationOptions o;
//   o.max_new_tokens = 64;
//   auto result = gen.generate(prompt_ids, o, [](int64_t token) { print(token); return true; });
//   // result.tokens: the new ids; result.timings.decode_tokens_per_second ...
//
// A Generator keeps the KV cache of its current call: one generate() at a time per object
// (make one per thread). Failures throw octet::Error naming the file and what was wrong.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "octet/session.h"

namespace octet {
namespace v1 {

struct GenerationOptions {
  int64_t max_new_tokens = 32;
  bool do_sample = false;          // false: greedy (or beam search with num_beams > 1)
  float temperature = 1.0f;        // sampling: logits / temperature (> 0)
  int64_t top_k = 0;               // sampling: keep the k most likely tokens; 0: off
  float top_p = 1.0f;              // sampling: nucleus, in (0, 1]; 1: off
  float repetition_penalty = 1.0f;  // transformers' rule; 1: off (applies to greedy too)
  uint64_t seed = 0;               // sampling's random stream
  // Stop after any of these (kept in the result). Empty: the model's eos_token_id from the
  // config.json / generation_config.json beside the model, when there is one.
  std::vector<int64_t> stop_token_ids;
  bool use_model_stop_tokens = true;  // false: ignore the model's eos (stop only as asked)
  // Encoder-decoder models only.
  int64_t num_beams = 1;
  float length_penalty = 1.0f;
  std::string early_stopping = "false";  // transformers' early_stopping: "false" | "true" | "never"
};

struct GenerationTimings {
  int64_t prompt_tokens = 0;
  int64_t new_tokens = 0;
  double time_to_first_token_ms = 0;    // the call until the first new token (prefill, encoder)
  double decode_tokens_per_second = 0;  // after the first token: (new_tokens - 1) / decode time
  double total_ms = 0;
};

struct GenerationResult {
  std::vector<int64_t> tokens;  // the new tokens only
  GenerationTimings timings;
  std::string stop_reason;      // "max_new_tokens" | "stop_token" | "callback"
};

// Called with each new token as it is chosen; return false to stop (the token is kept).
using TokenCallback = std::function<bool(int64_t token)>;

// A decoder-only model (GPT-2, Llama, ...). `model`: the .onnx file with past_key_values
// inputs, or a folder holding one (decoder_with_past_model.onnx [+ decoder_model.onnx],
// decoder_model_merged.onnx, model.onnx, or a single .onnx file) and, optionally,
// config.json / generation_config.json.
class Generator {
 public:
  explicit Generator(const std::string& model, const SessionOptions& options = {});

  GenerationResult generate(const std::vector<int64_t>& prompt, const GenerationOptions& options = {},
                            const TokenCallback& on_token = {});

  // The stop tokens the model's config names (empty without a config).
  std::vector<int64_t> eos_token_ids() const;
  const std::string& model_name() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// An encoder-decoder model (Marian, T5, BART) in optimum's file set, in one folder:
// encoder_model.onnx, decoder_with_past_model.onnx [+ decoder_model.onnx] or
// decoder_model_merged.onnx, and the config.json naming decoder_start_token_id and eos_token_id.
class Seq2SeqGenerator {
 public:
  explicit Seq2SeqGenerator(const std::string& folder, const SessionOptions& options = {});

  // `source`: the encoder's input ids. Beam search (options.num_beams > 1) reports no
  // tokens through on_token; its result is the best beam.
  GenerationResult generate(const std::vector<int64_t>& source, const GenerationOptions& options = {},
                            const TokenCallback& on_token = {});
  // The same from the encoder's own inputs (batch 1), e.g. Whisper's log-mel
  // {"input_features", float32[1, 80, frames]}.
  GenerationResult generate(const NamedTensors& encoder_inputs, const GenerationOptions& options = {},
                            const TokenCallback& on_token = {});

  std::vector<int64_t> eos_token_ids() const;
  // What the decoder starts from (config's decoder_start_token_id); settable for models
  // whose config lacks it.
  std::vector<int64_t> decoder_start_ids() const;
  void set_decoder_start_ids(std::vector<int64_t> ids);

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace v1
}  // namespace octet
