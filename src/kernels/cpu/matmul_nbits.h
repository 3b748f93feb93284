// The MatMulNBits decode GEMV's activation precision (matmul_nbits.cpp).
//
// Float (the default): A stays float32, weights are dequantized in registers.
// Int8: each row of A is quantized per weight block (symmetric int8, one scale per block)
// and the block dot products are integer (AVX512-VNNI), as onnxruntime's accuracy_level 4
// and llama.cpp's Q8_0 activations do. It changes the numerics (A's rounding), so it is
// opt-in: OCTET_NBITS_ACTIVATIONS=int8 (read once) or set_nbits_int8_activations. Asked for
// on a CPU or ISA level (OCTET_ISA) without AVX512-VNNI, the float path runs.
#pragma once

namespace octet::cpu {

void set_nbits_int8_activations(bool enabled);  // tests and benchmarks; not thread-safe with running sessions
bool nbits_int8_activations();                  // what was asked for
bool nbits_int8_path_available();               // whether the int8 GEMV runs at the active ISA level
bool nbits_int8_path_active();                  // asked for and available: what run_gemv does now

}  // namespace octet::cpu
