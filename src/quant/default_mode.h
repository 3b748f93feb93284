// The activation mode `octet quantize` picks when the caller names none (CLI without
// --mode, API mode "auto"): static with calibration samples, dynamic without -- except for
// decoder LLMs, which get per-token dynamic activations (target octet).
//
// Why: a decoder's residual stream carries a few channels hundreds of times larger than the
// rest, and which tokens carry them changes from token to token; one calibrated range per
// tensor either clips them or spends all 255 steps on them. SmolLM2-135M held-out
// perplexity against fp32 32.74: static per-tensor 34.17 (+4.4%), per-token dynamic with
// GPTQ-rounded weights 32.85 (+0.4%) (bench/results/2026-11-26_smollm2_default_mode_epyc-2core.md).
// Encoders (BERT, ViT) keep static activations: their fused int8 attention and
// precomputed scales are faster, and static already meets their fidelity.
//
// A decoder is recognised by what it computes, not by its names or ops: on one calibration
// sample with every position attended (an `attention_mask` input set to ones), changing the
// tokens of the second half of `input_ids` must leave every per-token output's first half
// unchanged while changing its second half. Bidirectional encoders
// fail the first test (every position sees every token), models without token inputs or
// per-token outputs are not probed.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "quant/calibration_data.h"
#include "quant/quantize.h"
#include "runtime/session.h"

namespace octet::quant {

// Nullopt unless the probe shows causal token-to-output dependence on `sample`; else one
// sentence saying what was changed and what stayed the same, for the report.
std::optional<std::string> causal_decoder_evidence(const Session& float_model, const NamedTensors& sample);

// Settles what `job` left to the defaults once the model is loaded: the mode (a causal decoder
// on the octet target gets per-token dynamic activations, probed on the first calibration
// sample with a session from `float_model`), then static mode's per-token linear inputs on
// the octet target. Says why in report.mode_reason.
void settle_default_mode(QuantizeJob& job, const std::function<Session()>& float_model, const CalibrationSource* source,
                         const std::vector<size_t>& calib_idx, QuantizeReport& report);

}  // namespace octet::quant
