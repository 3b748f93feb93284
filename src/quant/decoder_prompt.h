// Calibration samples for a decoder exported with a KV cache (optimum's names: input_ids,
// attention_mask, position_ids, past_key_values.N.key / .value).
//
// Calibration sets for language models hold token windows (input_ids, perhaps an
// attention_mask); the with-past export also asks for the cache and the positions on every
// call. Running a window through it as the first (prompt) step of generation is exactly
// what the model sees when it prefills, so the inputs a sample lacks are filled the way a
// first step gets them:
//   - past_key_values.*: an empty cache, past length 0; the other dims from the model's
//     declared dims (the batch as the sample binds it, kv heads and head dim constants);
//   - attention_mask: ones over past + sequence (= the sequence) when the sample has none;
//   - position_ids: 0..seq-1 per row, or, when the sample has an attention_mask, its
//     running count of kept tokens minus one (1 on padded positions), as Hugging Face's
//     generate computes them for a left-padded prompt.
// A sample that gives the whole cache (past length P) gets a mask over P + seq and
// positions P..P+seq-1 instead; a cache given in part is an error.
// Any other missing input (use_cache_branch, token_type_ids, ...) stays an error naming it.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/dim.h"
#include "runtime/session.h"

namespace octet::quant {

struct InputSpec;

// True for a cache input (optimum's past_key_values.N.key / .value).
bool is_past(const std::string& name);

// True when the inputs are those of a decoder with a KV cache: an `input_ids` input and at
// least one past_key_values.* input.
bool is_with_past_decoder(const std::vector<InputSpec>& inputs);

// True for the inputs fill_prompt_input can make (attention_mask, position_ids,
// past_key_values.*).
bool is_prompt_fillable(const std::string& name);

// The tensor a first step would get for `in`, given the sample's other inputs (`given`,
// already converted to the model's dtypes) and the symbols they bound. `where` starts
// error messages (the sample's file).
Tensor fill_prompt_input(const InputSpec& in, const NamedTensors& given, const Bindings& bound,
                         const std::string& where);

// "attention_mask, position_ids, past_key_values.* (60)": what fill_prompt_input would fill
// among `inputs`, for messages and reports.
std::string describe_prompt_fillable(const std::vector<InputSpec>& inputs);

}  // namespace octet::quant
