// The portable DecoderRunner: runs any decoder exported in optimum's naming through
// octet::Session::run, feeding each step's present.<X> outputs back as the next step's
// past_key_values.<X> inputs (<X> = "N.key" / "N.value" for decoder-only models,
// "N.decoder.key" / "N.encoder.key" ... for a seq2seq decoder). The model's own Concat
// copies the cache every step; the in-place runner (kvcache) avoids that where it applies.
//
// Inputs it fills by name: input_ids; attention_mask ([batch, past + new], ones) and
// position_ids ([batch, new], past .. past + new - 1) when the model takes them; the
// cache. Every other input must come in DecoderStep::extra_inputs (a seq2seq decoder's
// encoder_hidden_states, encoder_attention_mask). Reads `logits` and every present.<X>.
//
// optimum's merged decoder (decoder_model_merged.onnx, an If on a bool use_cache_branch
// input) runs alone: the runner sets use_cache_branch once there is a cache.
//
// Optionally a second model runs the first step: optimum's decoder_model.onnx, which has
// no past inputs and returns the whole cache (for a seq2seq decoder, also the
// cross-attention keys/values that decoder_with_past_model.onnx only reads). Without it,
// the first step runs the with-past model on an empty cache (past length 0).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "generate/decoder_runner.h"

namespace octet::generate {

class PortableRunner : public DecoderRunner {
 public:
  // `with_past` is required; `first` may be null. Throws octet::Error naming what is
  // missing when the models do not look like optimum's exports.
  PortableRunner(std::shared_ptr<const Session> with_past, std::shared_ptr<const Session> first = nullptr);

  Tensor step(const DecoderStep& step) override;

  // Shows each step's model inputs to `observer` before the model runs: calibration
  // collects the decode steps a decoder really sees. `first_model` is true for a step run
  // by the first-step model (optimum's decoder_model.onnx), false for the with-past one.
  using FeedObserver = std::function<void(bool first_model, const NamedTensors& feeds)>;
  void observe_feeds(FeedObserver observer) { observer_ = std::move(observer); }
  int64_t cached_tokens() const override { return cached_; }
  void reorder_rows(const std::vector<int64_t>& rows) override;
  void reset() override;

 private:
  NamedTensors inputs_for(const Session& session, const DecoderStep& step) const;
  Tensor empty_past(const Value& input, int64_t batch) const;

  std::shared_ptr<const Session> with_past_, first_;
  FeedObserver observer_;
  // The cache, by suffix <X>: what present.<X> returned last.
  std::vector<std::pair<std::string, Tensor>> cache_;
  int64_t cached_ = 0;
  int64_t batch_ = 0;
};

// True when the model reads a KV cache in optimum's naming (past_key_values.*).
bool takes_past(const Graph& graph);

}  // namespace octet::generate
