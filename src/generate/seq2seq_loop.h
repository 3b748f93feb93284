// Generation with an encoder-decoder (optimum's encoder_model.onnx + decoder files): the
// encoder runs once on the source ids, then the decoder generates from the decoder start
// tokens with its cache, reading the encoder's output every step. Greedy / sampling as in
// the decoder-only loop, or beam search as transformers' beam_search + BeamSearchScorer
// define it (num_beams, length_penalty, early_stopping True / False / "never").
#pragma once

#include <cstdint>
#include <vector>

#include "generate/decoder_loop.h"
#include "runtime/session.h"

namespace octet::generate {

enum class EarlyStopping {
  Heuristic,  // transformers' early_stopping=False: stop when no beam can beat the kept ones, by the current length
  Always,     // early_stopping=True: stop once num_beams hypotheses are finished
  Never,      // early_stopping="never": stop only when no beam can beat them at any length
};

struct Seq2SeqConfig {
  GenerationConfig generation;  // stop_token_ids are the eos ids
  std::vector<int64_t> decoder_start_ids;  // what the decoder starts from (Marian, T5: the pad id)
  int64_t num_beams = 1;        // 1: greedy or sampling; > 1: beam search (no sampling)
  float length_penalty = 1.0f;  // a finished beam scores sum(log p) / length ** length_penalty
  EarlyStopping early_stopping = EarlyStopping::Heuristic;
};

// The encoder's inputs: input_ids [1, n] and, when it takes one, attention_mask (ones).
// The decoder gets encoder_hidden_states (the encoder's first output) and, when it takes
// one, encoder_attention_mask. Beam search reports no tokens through `on_token` (a beam's
// tokens are final only at the end); the result holds the best beam's new tokens.
GenerationOutput generate_seq2seq(const Session& encoder, DecoderRunner& decoder, const std::vector<int64_t>& source,
                                  const Seq2SeqConfig& config, const TokenCallback& on_token = {});

// The same with the encoder's inputs given as they are (batch 1), e.g. Whisper's log-mel
// input_features [1, 80, frames]. encoder_attention_mask, when the decoder takes one, is ones
// over the encoder output's length.
GenerationOutput generate_seq2seq(const Session& encoder, DecoderRunner& decoder, const NamedTensors& encoder_inputs,
                                  const Seq2SeqConfig& config, const TokenCallback& on_token = {});

}  // namespace octet::generate
