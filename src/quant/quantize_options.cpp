#include "quant/quantize_options.h"

#include "octet/error.h"

namespace octet::quant {

bool writes_wide_probabilities(const QuantizeOptions& o) {
  return o.mode == Mode::Static && o.quantize_attention && o.row_probabilities && o.wide_probabilities &&
         o.target == Target::Octet;
}

const char* mode_name(Mode m) { return m == Mode::Static ? "static" : "dynamic"; }

const char* target_name(Target t) {
  switch (t) {
    case Target::Octet: return "octet";
    case Target::Ort: return "ort";
    case Target::TensorRT: return "tensorrt";
  }
  return "?";
}

const char* calibration_name(Calibration c) {
  switch (c) {
    case Calibration::MinMax: return "minmax";
    case Calibration::Percentile: return "percentile";
    case Calibration::Entropy: return "entropy";
    case Calibration::Mse: return "mse";
  }
  return "?";
}

Mode parse_mode(const std::string& s) {
  if (s == "static") return Mode::Static;
  if (s == "dynamic") return Mode::Dynamic;
  fail("unknown quantization mode '", s, "' (static|dynamic)");
}

Target parse_target(const std::string& s) {
  if (s == "octet") return Target::Octet;
  if (s == "ort" || s == "onnxruntime") return Target::Ort;
  if (s == "tensorrt" || s == "trt") return Target::TensorRT;
  fail("unknown target '", s, "' (octet|ort|tensorrt)");
}

Calibration parse_calibration(const std::string& s) {
  if (s == "minmax") return Calibration::MinMax;
  if (s == "percentile") return Calibration::Percentile;
  if (s == "entropy") return Calibration::Entropy;
  if (s == "mse") return Calibration::Mse;
  fail("unknown calibration method '", s, "' (minmax|percentile|entropy|mse)");
}

}  // namespace octet::quant
