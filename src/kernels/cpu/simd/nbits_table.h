// The blocked int4 / int8 weight x float32 activation dot products one ISA level provides:
// the inner loop of com.microsoft.MatMulNBits at decode (M = 1..kNbitsMaxRows rows of A),
// and the dequantization of B's columns for its prefill (sgemm) path.
// Kept free of heavy headers: the per-ISA translation units include it.
//
// Layout (what matmul_nbits.cpp prepares; MatMulNBits' own packing, read as it is in the file):
//   B     uint8 [N, k_blocks, block * bits / 8]; 4-bit values packed two per byte, element
//         2j in the low nibble of byte j, 2j+1 in the high nibble; 8-bit values one per byte.
//   A     float32 [rows, k_blocks * block], zero padded past K. For bits = 4 each run of 32
//         elements is stored evens first then odds (a[0], a[2], .., a[30], a[1], .., a[31]),
//         so one 16-byte load's low nibbles meet the first 16 values and its high nibbles the
//         next 16 without shuffles. block is a multiple of 32.
//   Result y[r * ldy + n] = sum_b scale[n, b] * sum_j (q[n, b, j] - zero[n, b]) * a[r, b * block + j]
//   (the caller adds the bias). The zero point is subtracted in registers, in the AVX-512
//   int4 path through the nibble -> float lookup table itself.
#pragma once

#include <cstdint>

namespace octet::cpu {

constexpr int kNbitsMaxRows = 4;  // rows of A one pass over B serves

struct NbitsGemvArgs {
  int bits = 4;
  int64_t rows = 1;       // 1..kNbitsMaxRows
  int64_t k_blocks = 0;
  int64_t block = 0;      // multiple of 32
  const uint8_t* b = nullptr;
  const float* scales = nullptr;  // [N, k_blocks]
  const float* zeros = nullptr;   // [N, k_blocks], the zero points as floats
  const float* a = nullptr;       // [rows, k_blocks * block], arranged as above
  float* y = nullptr;             // y[r * ldy + n]
  int64_t ldy = 0;
};

// The prefill path's dequantization: column n's K weights as floats, in the natural order,
// dst[k] = q[n, k] * scale[n, k / block] - zero_scale[n, k / block] (zero_scale = zero *
// scale, so the value is one FMA from the code; the reference kernel's (q - zero) * scale
// differs from it by float rounding only).
struct NbitsDequantArgs {
  int bits = 4;
  int64_t K = 0, k_blocks = 0, block = 0;  // block a multiple of 32; the last block may pass K
  const uint8_t* b = nullptr;
  const float* scales = nullptr;       // [N, k_blocks]
  const float* zero_scales = nullptr;  // [N, k_blocks]
};

struct NbitsTable {
  const char* name = nullptr;
  // Columns n0 <= n < n1 of y for every row of A: the sums above.
  void (*gemv)(const NbitsGemvArgs& args, int64_t n0, int64_t n1) = nullptr;
  // Column n of B dequantized into dst[0..K).
  void (*dequant)(const NbitsDequantArgs& args, int64_t n, float* dst) = nullptr;
};

void fill_nbits_table_generic(NbitsTable& t);
void fill_nbits_table_avx2(NbitsTable& t);
void fill_nbits_table_avx512(NbitsTable& t);
// Each sets dequant only (nbits_dequant_*.cpp).
void fill_nbits_dequant_generic(NbitsTable& t);
void fill_nbits_dequant_avx2(NbitsTable& t);
void fill_nbits_dequant_avx512(NbitsTable& t);
// Elements [j0, j1) of one block's codes q dequantized into dst[j0..j1) (the vector levels' tails).
void nbits_dequant_span(const uint8_t* q, int bits, float scale, float zero_scale, int64_t j0, int64_t j1,
                        float* dst);

}  // namespace octet::cpu
