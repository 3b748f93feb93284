// Decoders that take one new token per step.
//
// optimum's legacy decoder-only export (decoder_with_past_model.onnx, also the with-past
// branch of decoder_model_merged.onnx) is traced with a single new token: its
// attention_mask is declared [batch, past_sequence_length + 1], and for Llama the causal
// mask is built for that case only. Fed several new tokens at once (a prompt, a chunk) it
// returns wrong logits without any error -- onnxruntime gives the same wrong ones. The
// first step is meant for decoder_model.onnx (no past), which takes the whole prompt.
//
// one_token_steps() wraps a runner so that such a file is only ever given one new token
// per step: a step of several tokens runs as that many single-token steps (the same
// result as one step on a decoder that takes several, at the speed of one token at a
// time). The first step stays whole when a first-step file takes it.
#pragma once

#include <memory>

#include "generate/decoder_runner.h"
#include "ir/graph.h"

namespace octet::generate {

// True when `with_past` declares one new token per step: its attention_mask input's last
// dim is its past_key_values.0.key's past length + 1.
bool takes_one_new_token(const Graph& with_past);
// The same test on the two inputs' declared dims (attention_mask [batch, total],
// past_key_values.0.key [batch, heads, past, head_dim]).
bool one_new_token_dims(const DimVector& attention_mask, const DimVector& past_key);

// `inner`, with every step of more than one token per row split into single-token steps;
// except the first step of a sequence when `whole_first_step` (a first-step file runs it).
std::unique_ptr<DecoderRunner> one_token_steps(std::unique_ptr<DecoderRunner> inner, bool whole_first_step);

}  // namespace octet::generate
