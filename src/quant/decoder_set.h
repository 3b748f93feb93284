// Quantizing a decoder-only LM exported in optimum's legacy layout as one job: a folder with
// decoder_model.onnx (the first step: the prompt, no past), decoder_with_past_model.onnx
// (every later step) and optionally decoder_model_merged.onnx (one If on use_cache_branch
// over the two), no encoder_model.onnx.
//
// Why not file by file: the legacy with-past file takes one new token per step
// (one_token_steps.h), so a prompt window through it with an empty cache -- how a single
// with-past file is calibrated (decoder_prompt.h) -- computes something it never computes
// when generating. Here each file is calibrated on the steps it really runs: every prompt
// sample goes through the float decoder_model, then `max_new_tokens` greedy steps through
// the float decoder_with_past_model on the cache, and each step's inputs become a
// calibration sample of the file that ran it. The held-out share of the prompts
// (split_holdout: the last --holdout share of 5 or more) is left out of calibration and
// decoded greedily by the float split files, the quantized split files and the quantized
// merged file: token agreement is the report's fidelity.
//
// The merged file is written from the two quantized files (merged_decoder.h); weights the
// two quantized identically (RTN, or a unified int8 copy) are stored once.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "onnx/model_io.h"
#include "quant/merged_decoder.h"

namespace octet::quant {

// A folder holding decoder_model.onnx and decoder_with_past_model.onnx and no
// encoder_model.onnx (the CLI's test; an encoder-decoder set is seq2seq_set.h's).
bool is_decoder_only_set(const std::filesystem::path& path);

// One file's quantization as the caller runs it (quantize_model or quantize_weights_only):
// its report as JSON and text.
struct DecoderSetFileReport {
  nlohmann::json json;
  std::string text;
};
using QuantizeDecoderFile = std::function<DecoderSetFileReport(
    const std::filesystem::path& model, const std::filesystem::path& output, const std::string& calib)>;

struct DecoderSetJob {
  std::filesystem::path folder, out_dir;  // out_dir is created; the caller checked it may be
  std::string calib;                      // prompt samples (input_ids); "" for none
  size_t calib_samples = 0;               // at most this many (0: all)
  double holdout = 0.2;                   // share of the prompts kept for the fidelity check
  int max_new_tokens = 16;                // greedy steps per prompt (calibration and fidelity)
  QuantizeDecoderFile quantize_file;
  SaveOptions save;
  bool progress = true;
};

struct DecoderSetReport {
  std::vector<std::pair<std::string, DecoderSetFileReport>> files;
  size_t prompts = 0, first_step_samples = 0, later_step_samples = 0;
  bool has_merged = false;
  MergedDecoderSummary merged;
  // Greedy decoding of the held-out prompts: quantized split files and quantized merged
  // file against the float split files, token by token (free-running).
  size_t eval_prompts = 0, tokens = 0, split_agreeing = 0, merged_agreeing = 0;

  nlohmann::json to_json() const;
  std::string to_text() const;
};

DecoderSetReport quantize_decoder_set(const DecoderSetJob& job);

}  // namespace octet::quant
