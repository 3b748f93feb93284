// MatMulNBits' weights repacked at session creation for the integer decode GEMV
// (AVX512-VNNI, simd/nbits_gemv_packed_vnni_avx512.cpp), and the quantized A it reads.
//
// Why repack: in the file's layout ([N, k_blocks, blob], one column after another) an
// integer dot product sums one column's products into one lane group and ends in a
// horizontal reduction per column. Here 16 columns ("a panel") sit side by side in 4-byte
// groups, so one 64-byte load feeds one VPDPBUSD / VPDPWSSD whose 16 int32 lanes are the
// 16 columns, and the activation operand is one broadcast 4-byte group of A. Loads are
// whole aligned cache lines, read front to back (one stream per thread); no shuffles.
//
//   bits = 4 (int8 activations, VPDPBUSD):   b[panel][k_block][g = block/8][16 columns][4 bytes]
//     byte j of column c in group g: low nibble the code of k = 8g + j, high nibble k = 8g + 4 + j
//     (k counted inside the block). 8 * block bytes per panel and block.
//   bits = 8 (int16 activations, VPDPWSSD):  b[panel][k_block][g = block/4][16 columns][4 bytes]
//     the codes of k = 4g .. 4g + 3 in order; as two 16-bit words (k0 | k1 << 8, k2 | k3 << 8)
//     a mask gives the words (k0, k2) and a shift (k1, k3): zero-extended without shuffles.
//     A's int16 codes are stored to match: per 4 values of k, (a0, a2, a1, a3).
//   scales: float [panel][k_block][16], the block's scale.
//   zeros:  int32 [panel][k_block][16], the zero point z as the int16 pair (z, 128 z).
// Columns past N (the last panel's padding) have codes 0 and scale 0: they add 0 and are
// never stored.
//
// A per row, quantized symmetrically per run of 32 elements (k / 32; block is a multiple
// of 32, so a block holds whole runs), zero past K:
//   a[r, k] ~ a_scale[r, k / 32] * aq[r, k],  a_scale = max|a| / qmax, codes rounded to
//   nearest even; qmax = 127 (int8 codes, for 4-bit weights) or 32767 (int16, 8-bit weights;
//   stored in the (a0, a2, a1, a3) order above).
//   a_zero[r, u] = the int16 pair (l, h) with l + 128 h = -(sum of aq over run u), 0 <= l < 128.
// Then per run the zero point comes off in integers, exactly: one VPDPWSSD of the zeros'
// pairs with a_zero's adds z l + 128 z h = -z * sum(aq) to the run's lanes (128 z <= 32640 and
// |h| <= 8192 fit int16; a lane stays under 2^30). Exact matters: the float alternative,
// scale * a_scale * dot - zero * scale * sum(A), cancels two large terms, and with the
// outliers real activations have (x100-x1000) it moved SmolLM2 int8's decode-path perplexity
// by 0.4%. So, with dot = sum over the run of q * aq (at most 32 products of |255 * 32767|):
//   y[r, n] = sum_u scale[n, u * 32 / block] * a_scale[r, u] * (dot(q[n, u], aq[r, u]) - zero[n, u * 32 / block] * sum(aq[r, u])).
#pragma once

#include <cstdint>
#include <memory>

#include "core/tensor.h"

namespace octet::cpu {

constexpr int64_t kNbitsPanel = 16;  // columns per panel: one zmm of int32 lanes

struct NbitsPacked {
  int bits = 4;
  int64_t N = 0, k_blocks = 0, block = 0, panels = 0;
  Tensor b;            // uint8, 64-byte aligned, panels * k_blocks * block * 16 * bits / 8 bytes
  Tensor scales;       // float [panels, k_blocks, 16]
  Tensor zeros;        // int32 [panels, k_blocks, 16]: (z, 128 z) as int16 pairs
};

// From the file's layout (nbits_table.h): b [N, k_blocks, block * bits / 8], scales [N,
// k_blocks], zero points as integers [N, k_blocks].
NbitsPacked pack_nbits(int bits, int64_t N, int64_t k_blocks, int64_t block, const uint8_t* b, const float* scales,
                       const uint8_t* zeros);

struct NbitsPackedArgs {
  const NbitsPacked* w = nullptr;
  int64_t rows = 1;                 // 1..kNbitsMaxRows
  const void* a = nullptr;          // int8 codes (bits 4) or int16 ones (bits 8) [rows, k_blocks * block]
  const float* a_scales = nullptr;  // [rows, k_blocks * block / 32]
  const int32_t* a_zero = nullptr;  // [rows, k_blocks * block / 32], int16 pairs
  float* y = nullptr;               // y[r * ldy + n]
  int64_t ldy = 0;
};

// A's rows (length K, row stride lda) quantized as above into aq [rows, k_blocks * block].
struct NbitsQuantizeArgs {
  const float* a = nullptr;
  int64_t rows = 1, K = 0, lda = 0, k_blocks = 0, block = 0;
  int qmax = 127;
  bool int16 = false;  // codes stored as int16, (a0, a2, a1, a3) (the 8-bit weights' kernel reads those, whatever qmax)
  void* aq = nullptr;
  float* a_scales = nullptr;
  int32_t* a_zero = nullptr;
};

struct NbitsPackedKernels {
  void (*quantize)(const NbitsQuantizeArgs& q) = nullptr;
  // Panels p0 <= p < p1 of y, every row.
  void (*gemv)(const NbitsPackedArgs& g, int64_t p0, int64_t p1) = nullptr;
};

// The AVX512-VNNI kernels, or nulls where the CPU lacks them.
NbitsPackedKernels nbits_packed_kernels_vnni();

}  // namespace octet::cpu
