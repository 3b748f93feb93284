// A decoder model run step by step, its KV cache kept between steps: what the generation
// loops (greedy, sampling, beam search; decoder-only and seq2seq) drive.
//
// Two kinds of runner implement it:
//   - the portable one feeds each step's present.N.* outputs back as the next step's
//     past_key_values.N.* inputs (any export in optimum's naming runs this way; the cache
//     is copied by the model's own Concat every step);
//   - the in-place one runs a graph whose attention-with-past was fused (octet's cached
//     attention op): the cache lives in buffers the runner owns, sized once by reserve(),
//     and a step writes only its new rows, never copying the whole cache.
// The loops never know which one they have.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/session.h"

namespace octet::generate {

// One step's input.
struct DecoderStep {
  // The new tokens, [batch, new_tokens] row-major, which follow the tokens already cached.
  // Every row holds the same number of tokens (no padding inside the runner).
  std::vector<int64_t> tokens;
  int64_t batch = 1;
  // Inputs passed to the model unchanged on every step besides the ids, mask, positions
  // and cache, e.g. a seq2seq decoder's encoder_hidden_states / encoder_attention_mask.
  NamedTensors extra_inputs;
};

class DecoderRunner {
 public:
  virtual ~DecoderRunner() = default;

  // Runs `step.tokens` after the cached tokens and appends them to the cache. Returns the
  // logits of each row's last new token: float32 [batch, vocab].
  virtual Tensor step(const DecoderStep& step) = 0;

  // Tokens held in the cache (the same count for every row).
  virtual int64_t cached_tokens() const = 0;

  // A hint: the cache will hold at most `max_tokens` tokens per row (prompt + new tokens),
  // so an in-place runner can size its buffers once. Runners that do not need it ignore it.
  virtual void reserve(int64_t max_tokens) { (void)max_tokens; }

  // Beam search: row r of the cache becomes the old row `rows[r]` (rows.size() is the new
  // batch and may differ from the old one).
  virtual void reorder_rows(const std::vector<int64_t>& rows) = 0;

  // Empties the cache, for a new prompt.
  virtual void reset() = 0;
};

}  // namespace octet::generate
