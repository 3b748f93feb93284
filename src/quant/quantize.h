// `octet quantize` as a library call: load a float ONNX model, plan, calibrate (static),
// rewrite to the target's quantized form, check it against the target profile, write it,
// and measure what quantization cost (docs/quantization.md).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>

#include "ir/dim.h"
#include "onnx/model_io.h"
#include "quant/calibrate.h"
#include "quant/quant_report.h"
#include "quant/mixed_precision.h"
#include "quant/quantize_options.h"
#include "quant/smoothquant.h"

namespace octet::quant {

struct QuantizeJob {
  std::filesystem::path model, output;  // the caller has checked that output may be written
  QuantizeOptions options;
  std::string calib;         // calibration samples (required in static mode); "" for none
  size_t calib_samples = 0;  // use at most this many (0: all)
  double holdout = 0.2;      // share of samples held out for the fidelity report
  size_t sqnr_samples = 8;   // per-layer SQNR over at most this many calibration samples
  Bindings dims;             // where to count MACs (default: the first sample's shapes)
  SaveOptions save;
  bool progress = true;  // a progress bar on stderr while calibrating and evaluating
  // When set, replaces the stderr bar: called once per stage with its label, it returns
  // the stage's progress function (the public API forwards these to its callback).
  std::function<ProgressFn(const std::string& label)> progress_sink;
  std::optional<SmoothingRequest> smoothing;  // --smoothquant ALPHA|auto
  bool explain = false;                       // per-layer input statistics (--explain)
  std::optional<double> max_drop;             // --max-drop: keep layers float until met
  Metric metric = Metric::Cosine;             // --metric, for max_drop
  // --rounding: GPTQ (gptq.h) for MatMul/Gemm weights when samples are given, else nearest.
  bool gptq = true;
  // The caller named no mode (static was chosen for having samples) and no --smoothquant:
  // quantize_model may then switch a decoder LLM to per-token dynamic activations and drop
  // the smoothing that was only static mode's default (default_mode.h).
  bool mode_is_default = false;
  bool smoothing_is_default = false;
  // The caller named no --per-token: static mode on the octet target then quantizes every
  // MatMul/Gemm input per token (default_per_token()), attention and Conv stay calibrated.
  bool per_token_is_default = false;
};

// What static mode on the octet target quantizes per token unless told otherwise: the
// inputs of the linear layers. One calibrated scale for all tokens is what costs static
// int8 most on real encoders (DINOv2-S CLS cosine 0.9959 -> 0.9994 with it and 4095-level
// probabilities; all-MiniLM-L6 0.9981 -> 0.9988, min 0.9914 -> 0.9968; 0.9995 and 0.9994
// once the smoothing search and GPTQ model the per-row inputs). It costs some speed: per-row
// scales do not fit oneDNN's fused int8 primitive, so the epilogue (GeLU included) runs
// after the product on each row block (quiet, session 11: MiniLM-L6 3.03-3.08 ms per token vs
// 2.70-3.23 calibrated; DINOv2 12.81 vs 11.67).
const std::set<std::string>& default_per_token();

// Writes job.output and returns the report. Every failure is an octet::Error naming the
// file, node or option at fault; nothing is written when the graph breaks the target's rules.
QuantizeReport quantize_model(const QuantizeJob& job);

}  // namespace octet::quant
