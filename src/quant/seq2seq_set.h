// Quantizing an encoder-decoder set as one job (issue 17): optimum's folder layout
// (encoder_model.onnx, decoder_model.onnx, decoder_with_past_model.onnx, config.json, and
// optionally decoder_model_merged.onnx).
//
// The decoder is calibrated on the decode steps it really sees: each encoder calibration
// sample goes through the float encoder, then greedy decoding with the float decoders
// (decoder_model for the first step, decoder_with_past_model with the cache after it),
// and every step's inputs become a calibration sample of the file that ran it. Fidelity:
// on the held-out encoder samples, greedy decoding with the float set and with the int8
// set (token agreement), and the int8 decoder's logits on the float run's tokens (top-1
// agreement and cosine per step). The merged decoder, when there is one, is assembled from
// the two quantized decoders (merged_decoder.h) and checked against them on the same samples.
//
// The greedy loop here is internal and minimal (batch rows decoded in lockstep, no
// sampling or beams); it is to be replaced by the generation library's loop
// (src/generate) once that lands.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "quant/merged_decoder.h"
#include "quant/quantize.h"

namespace octet::quant {

// The three files every set has, in the order they are quantized.
extern const char* const kSeq2SeqFiles[3];
// optimum's merged decoder: quantized too when the folder has it (merged_decoder.h).
extern const char* const kMergedDecoder;

// True when `path` is a folder holding encoder_model.onnx (the CLI's test for a set).
bool is_seq2seq_set(const std::filesystem::path& path);

struct Seq2SeqSetJob {
  // Options and settings for every file; base.model and base.output are ignored, and
  // base.calib holds the ENCODER's calibration samples (the decoders' are generated).
  QuantizeJob base;
  std::filesystem::path folder, out_dir;  // out_dir is created; the caller checked it may be
  int max_new_tokens = 16;               // greedy steps per calibration / held-out sample
  // base.smoothing came from an explicit --smoothquant (not static mode's default): kept
  // for the decoders even when the merged decoder then shares fewer weights.
  bool smoothing_requested = false;
};

struct Seq2SeqSetReport {
  std::vector<std::pair<std::string, QuantizeReport>> files;  // file name -> its report
  size_t decode_samples = 0;  // decoder calibration samples generated (all steps)
  // Held-out fidelity (empty when there were no encoder samples).
  size_t eval_sequences = 0, eval_in_sample = 0;
  size_t exact_sequences = 0;        // int8 greedy output == float greedy output
  size_t tokens = 0, agreeing_tokens = 0;  // free-running, position by position
  size_t forced_steps = 0, forced_top1_agree = 0;  // int8 decoder on the float tokens
  double min_logits_cosine = 1, mean_logits_cosine = 1;
  // The merged decoder, when the set has one: what was shared, and on the held-out samples
  // its greedy tokens against the int8 split files' and its logits on their tokens.
  bool has_merged = false;
  bool decoders_unsmoothed = false;  // the decoders quantized without SmoothQuant (see seq2seq_set.cpp)
  MergedDecoderSummary merged;
  size_t merged_tokens = 0, merged_agreeing_tokens = 0;
  double merged_max_rel_diff = 0;

  nlohmann::json to_json() const;
  std::string to_text() const;
};

Seq2SeqSetReport quantize_seq2seq_set(const Seq2SeqSetJob& job);

}  // namespace octet::quant
