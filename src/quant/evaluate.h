// How close a quantized model stays to its float original, measured by running both in
// octet on the same samples: per-layer SQNR (the quantized node's output against the
// float one) and end-output fidelity (cosine, max abs error, top-1 agreement).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "quant/calibration_data.h"
#include "quant/quant_report.h"
#include "runtime/session.h"

namespace octet::quant {

// SQNR in dB per pair (float value name, quantized value name), keyed by the float name,
// over `samples`: 10 log10(sum y^2 / sum (y - y_q)^2). A layer with no error gets +inf
// (reported as null in JSON); a pair never computed is absent.
std::map<std::string, double> layer_sqnr(const Session& float_model, const Session& quantized_model,
                                         const std::vector<std::pair<std::string, std::string>>& pairs,
                                         const CalibrationSource& source, const std::vector<size_t>& samples);

// Every float graph output compared over `samples`: cosine similarity of the flattened
// outputs (all samples together), the largest absolute difference, and for outputs named
// like logits (rank >= 2, last dim >= 2) the share of rows whose argmax agrees.
std::vector<OutputFidelity> output_fidelity(const Session& float_model, const Session& quantized_model,
                                            const CalibrationSource& source, const std::vector<size_t>& samples);

// The largest relative difference between two models that should compute the same thing
// (a smoothed float model and its original): per float output, max |a - b| over max |a|,
// the worst output and sample. 0 when they agree exactly.
double max_relative_error(const Session& reference, const Session& other, const CalibrationSource& source,
                          const std::vector<size_t>& samples);
// The same against outputs `reference` computed earlier on `samples` (one entry per
// sample, in order): what the quantizer uses once the reference graph was changed in place.
double max_relative_error(const std::vector<NamedTensors>& reference, const Session& other,
                          const CalibrationSource& source, const std::vector<size_t>& samples);

}  // namespace octet::quant
