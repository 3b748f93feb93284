// The MatMulNBits decode GEMV's activation precision (matmul_nbits.cpp).
//
// Float: A stays float32, weights are dequantized in registers (the file's layout).
// Integer (AVX512-VNNI only; simd/nbits_packed.h): each row of A is quantized per run of 32
// elements (symmetric, one scale per run) and the products are integer dot products on
// weights repacked into 16-column panels at session creation.
//   Int8 A (as onnxruntime's accuracy_level 4 and llama.cpp's Q8_0): measured on SmolLM2's
//   decode path (bench/decode_path_ppl.py, 8 held-out windows) int4 weights +0.07%
//   perplexity, within the +0.2% budget; int8 weights +0.26%, over it.
//   Int16 A: the float path's accuracy (A's step is max|a| / 32639), for 8-bit weights; held
//   as two signed bytes per value (nbits_packed.h), so the products are VPDPBUSD's too.
// Auto (the default): int8 A for 4-bit weights, int16 A for 8-bit ones, where VNNI is;
// float elsewhere. Int8 forces int8 A for both widths (8-bit weights then read int8 codes
// through the 16-bit kernel: the numerics of int8 A, for measuring them). Float forces float.
// On a CPU or ISA level (OCTET_ISA) without AVX512-VNNI, float runs whatever was asked.
// Chosen with OCTET_NBITS_ACTIVATIONS=auto|float|int8 (read once per process) or
// set_nbits_activations. Prefill (more than kNbitsMaxRows rows) keeps A float32 either way.
#pragma once

namespace octet::cpu {

enum class NbitsActivations { Auto, Float, Int8 };
enum class NbitsDecodePath { Float, Int8, Int16 };  // A's precision in the decode GEMV

void set_nbits_activations(NbitsActivations mode);  // tests and benchmarks; not thread-safe with running sessions
NbitsActivations nbits_activations();               // what was asked for
bool nbits_int8_path_available();                   // whether the integer GEMVs run at the active ISA level
NbitsDecodePath nbits_decode_path(int bits);        // what run_gemv does now for `bits`-bit weights
bool nbits_int8_path_active(int bits);              // nbits_decode_path(bits) == Int8

}  // namespace octet::cpu
