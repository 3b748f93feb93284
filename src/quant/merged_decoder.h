// The quantized merged decoder of an encoder-decoder set (issue 17).
//
// optimum's decoder_model_merged.onnx is one If on a bool input (use_cache_branch) whose
// two branches are decoder_model (no past: the first step) and decoder_with_past_model
// (every later step), their weights deduplicated into initializers of the outer graph.
// Quantizing the set already produces both decoders, calibrated on the same greedy decode
// run (the first step through the no-past file, the later steps through the with-past
// one) -- exactly the activations the two branches see. So the quantized merged file is
// assembled from them: the float merged file's interface (inputs, outputs, the If and its
// condition) with each branch's body replaced by the quantized decoder's graph, and every
// initializer the two quantized graphs hold identically (same name, type, shape and bytes)
// moved to the outer graph once (initializer names differ between the two exports, so
// equal content is what counts).
//
// Weights: each float weight is one initializer of optimum's merged file, used by both
// branches, and should stay one int8 tensor. The two quantized decoders round it
// differently where GPTQ saw their own calibration steps (the no-past file only ever sees
// the first step: the start token). So, when the float split files are given, the no-past
// branch takes the with-past decoder's int8 copy (data, scale, zero point) of every weight
// the two float files share, calibrated on all later steps; a weight SmoothQuant rescaled
// in either file keeps its own copy, since its activation was rescaled with it. The
// with-past branch then computes exactly what decoder_with_past_model computes; the
// no-past branch differs from decoder_model by that rounding only (the set report
// measures the merged decoder against the split files on held-out samples).
//
// Branch outputs follow the float branch's order and names; an output the quantized graph
// does not produce (optimum gives the with-past branch constant empty cross-attention
// presents) is taken over from the float branch when a constant node makes it.
#pragma once

#include <cstdint>
#include <filesystem>

#include "onnx/model_io.h"

namespace octet::quant {

struct MergedDecoderSummary {
  size_t unified_weights = 0;  // no-past weights replaced by the with-past branch's int8 copy
  size_t shared_initializers = 0, branch_initializers = 0;  // outer graph / left inside a branch
  uint64_t shared_bytes = 0, branch_bytes = 0;
};

struct MergedDecoderFiles {
  std::filesystem::path float_merged;        // optimum's decoder_model_merged.onnx
  std::filesystem::path no_past, with_past;  // the quantized decoder_model / decoder_with_past_model
  // The float decoder_model / decoder_with_past_model; when given, weights are unified
  // (see below). Empty: each branch keeps its own quantized weights.
  std::filesystem::path float_no_past, float_with_past;
};

// Writes `out` from the float merged decoder and the two quantized decoders (the one of
// an older opset than the other is raised to opset 21 and rewritten in place first). Errors name
// the file and what does not fit optimum's merged layout.
MergedDecoderSummary write_quantized_merged_decoder(const MergedDecoderFiles& files, const std::filesystem::path& out,
                                                    const SaveOptions& save);

}  // namespace octet::quant
