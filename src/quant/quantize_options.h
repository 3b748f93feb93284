// What `octet quantize` is asked to do: the options every part of src/quant/ reads.
// Defaults are the ones docs/quantization.md describes (static uint8 activations, int8
// per-channel symmetric weights, attention quantized, embeddings quantized).
#pragma once

#include <set>
#include <string>

#include "core/dtype.h"

namespace octet::quant {

enum class Mode { Static, Dynamic };
enum class Target { Octet, Ort, TensorRT };
enum class Calibration { MinMax, Percentile, Entropy, Mse };

struct QuantizeOptions {
  Mode mode = Mode::Static;
  Target target = Target::Octet;
  Calibration calibration = Calibration::MinMax;
  double percentile = 99.99;  // Calibration::Percentile
  // Activations: UInt8 asymmetric or Int8 symmetric (zero point 0).
  DType activation_type = DType::UInt8;
  bool per_channel_weights = true;  // false: one scale per weight tensor (--per-tensor)
  bool quantize_attention = true;   // the activation x activation MatMuls (Q.K^T, P.V)
  // Default (--attention int8; int8-tensor turns it off): P.V reads exp(S - rowmax(S)) quantized with the fixed scale 1/255
  // (each row's own max is 1) and divides by the row sums after the product, which is P
  // quantized with a scale per row; per tensor, P's small probabilities over hundreds of
  // keys fall below one step (DINOv2-S, 257 tokens: CLS cosine 0.977 -> 0.996). Standard ops
  // (ReduceMax, Sub, Exp, ReduceSum, Div); octet fuses them back into octet.QAttention.
  bool row_probabilities = true;
  // With row_probabilities on the octet target: E gets 4095 levels (int16, zero point 0;
  // QuantizeLinear to int16 needs opset 21, to which the model is raised) instead of 255.
  // At 255 levels every key with exp(s - rowmax) < 1/510 rounds to zero; over DINOv2's 257
  // tokens that drops 1-2% of each row's mass and costs as much as V's own rounding (P.V
  // SQNR 28-46 dB per layer, 31-51 with E exact). The int16 products cost the same: octet's
  // kernel multiplies int16 pairs whatever the width.
  bool wide_probabilities = true;
  bool quantize_embeddings = true;  // Gather on a constant float table -> int8 rows
  // Tables smaller than this stay float: int8 would save less than this much file, the
  // runtime folds such a table back to float anyway (the optimizer's fold_max_bytes), and
  // on real BERTs the small ones (position, token type: every token adds the same row) cost
  // most of the embedding error (paraphrase-MiniLM-L3: cosine 0.9954 -> 0.9968 when kept).
  size_t min_embedding_bytes = size_t{1} << 20;
  // Node names or op types kept in float (--exclude).
  std::set<std::string> exclude;
  // Static mode: node names or op types (MatMul/Gemm with a constant weight) whose input is
  // quantized per token at run time instead of with one calibrated scale (--per-token;
  // target octet: its QMatMul takes a scale per row, ONNX's DynamicQuantizeLinear only one
  // per tensor). For the few inputs whose tokens differ in range by orders of magnitude
  // (a BERT's FFN down projection after GELU), one scale for every token rounds most
  // tokens to a handful of levels.
  std::set<std::string> per_token;
};

// The levels E takes with wide_probabilities (12 bits: P.V sums of up to ~2000 keys stay
// exact in int32 against 8-bit V; longer rows take the reference kernel).
constexpr int kWideProbabilityLevels = 4095;
// True when `o` writes E with kWideProbabilityLevels: static, attention in int8 row form, octet target.
bool writes_wide_probabilities(const QuantizeOptions& o);

const char* mode_name(Mode m);
const char* target_name(Target t);
const char* calibration_name(Calibration c);
// Parse the CLI spellings ("static", "ort", "entropy"); throw octet::Error listing the
// accepted values on anything else.
Mode parse_mode(const std::string& s);
Target parse_target(const std::string& s);
Calibration parse_calibration(const std::string& s);

}  // namespace octet::quant
