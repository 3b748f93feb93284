// The in-place DecoderRunner for a decoder exported as a first-step file and a with-past
// file. Written for an encoder-decoder's decoder; optimum's legacy decoder-only pair
// (decoder_model + decoder_with_past_model, or the two branches of decoder_model_merged)
// runs on it too, simply without cross-attention. An encoder-decoder's, as optimum
// exports it: decoder_model.onnx (the first step: no past; returns present.N.decoder.* for the start
// tokens and present.N.encoder.*, the cross-attention keys/values of the encoder output)
// and decoder_with_past_model.onnx (every later step: reads past_key_values.N.decoder.*
// and .encoder.*, returns present.N.decoder.*).
//
// The with-past graph is rewritten once (in_place_cache.h): each self-attention
// (GroupedAttention over Concat(past_key_values.N.decoder.*, new)) becomes CachedAttention
// over a runner-owned cache, appended in place; each cross-attention (GroupedAttention
// reading past_key_values.N.encoder.* directly) stays as it is and is fed the tensors the
// first step returned, held by the runner for the whole sequence: never recomputed,
// copied or re-fed through a Concat. The first step runs decoder_model.onnx as it is; its
// present.N.decoder.* rows (the start tokens) are written into the caches once.
//
// Beam search: reorder_rows gathers the rows of the self-attention caches and of the
// cross-attention keys/values, except where every row of the latter is the same (one
// source repeated over the beams, as the seq2seq loop does): then they stay as they are.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "generate/decoder_runner.h"

namespace octet::generate {

// The runner, or nullptr with `why` (when not null) saying what stopped it: no first-step
// model, attention not fused (e.g. a static int8 decoder whose attention products are
// quantized), a past tensor read by more than its attention and Shape nodes, a
// cross-attention input the first step does not return. `with_past` is taken and
// rewritten (optimized first when it holds no octet.GroupedAttention yet).
std::unique_ptr<DecoderRunner> make_seq2seq_in_place_runner(std::shared_ptr<Graph> with_past,
                                                            std::shared_ptr<const Session> first,
                                                            const SessionOptions& options, std::string* why = nullptr);

// Tests: the memory a seq2seq in-place runner reads its caches from, self-attention
// caches then cross-attention keys/values (each a data pointer); empty when `runner` is
// not one. Stable across steps once reserve() sized the caches: no step copies them.
std::vector<const void*> seq2seq_cache_memory(const DecoderRunner& runner);

}  // namespace octet::generate
