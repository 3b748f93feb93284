// The MatMulNBits decode GEMV's activation precision (matmul_nbits.cpp).
//
// Float: A stays float32, weights are dequantized in registers.
// Int8: each row of A is quantized per run of 32 elements (symmetric int8, one scale per
// run) and the run dot products are integer (AVX512-VNNI), as onnxruntime's accuracy_level 4
// and llama.cpp's Q8_0 activations do: 1.2-2x the float GEMV's speed, but A's rounding
// changes the numerics. On a CPU or ISA level (OCTET_ISA) without AVX512-VNNI, float runs.
// Auto (the default): int8 for 4-bit weights, float for 8-bit ones. Measured on SmolLM2's
// decode path (bench/decode_path_ppl.py, 8 held-out windows; bench/README.md): int4 weights
// +0.07% perplexity, within the +0.2% budget and small beside int4's own loss; int8 weights
// +0.26%, about what int8 weights themselves cost over fp32, so they keep float A.
// Chosen with OCTET_NBITS_ACTIVATIONS=auto|float|int8 (read once per process) or
// set_nbits_activations. Prefill (more than kNbitsMaxRows rows) keeps A float32 either way.
#pragma once

namespace octet::cpu {

enum class NbitsActivations { Auto, Float, Int8 };

void set_nbits_activations(NbitsActivations mode);  // tests and benchmarks; not thread-safe with running sessions
NbitsActivations nbits_activations();               // what was asked for
bool nbits_int8_path_available();                   // whether the int8 GEMV runs at the active ISA level
bool nbits_int8_path_active(int bits);              // what run_gemv does now for `bits`-bit weights

}  // namespace octet::cpu
