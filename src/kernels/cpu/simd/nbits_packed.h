// MatMulNBits' weights repacked at session creation for the integer decode GEMV
// (AVX512-VNNI, simd/nbits_gemv_packed_vnni_avx512.cpp), and the quantized A it reads.
//
// Why repack: in the file's layout ([N, k_blocks, blob], one column after another) an
// integer dot product sums one column's products into one lane group and ends in a
// horizontal reduction per column. Here 16 columns ("a panel") sit side by side in 4-byte
// groups, so one 64-byte load feeds one VPDPBUSD whose 16 int32 lanes are the 16 columns,
// and the activation operand is one broadcast 4-byte group of A. No shuffles.
//
// One stream: a panel's blocks follow each other, and each block carries its own scales
// (and zero points, where they differ between columns or blocks) right after its codes, so
// the kernel reads every byte of a panel front to back, in whole aligned cache lines. (Three
// separate streams -- codes, scales, zero points -- cost the int8 GEMV a quarter more bytes
// and two more prefetch streams.)
//   stream[panel][k_block] = codes, then scales float[16], then (unless uniform) zeros int32[16]
//   codes, bits = 4 (int8 A):   [g = block/8][16 columns][4 bytes]
//     byte j of column c in group g: low nibble the code of k = 8g + j, high nibble k = 8g + 4 + j
//     (k counted inside the block). 8 * block bytes.
//   codes, bits = 8 (split A):  [g = block/4][16 columns][4 bytes], the codes of k = 4g .. 4g + 3
//     in order (unsigned, 0..255): VPDPBUSD's unsigned operand as they are. 16 * block bytes.
//   scales: the block's scale per column.
//   zeros:  the zero point z as the int16 pair (z, 128 z), per column.
// Uniform zero point: where every zero point of the weight is the same z (a symmetric
// quantization: z = 2^(bits-1), what octet's and most exporters' int4/int8 weights have),
// the zeros are left out of the stream and the zero term comes from A alone (below).
// Columns past N (the last panel's padding) have codes 0 and scale 0: they add 0 and are
// never stored.
//
// A per row, quantized symmetrically per run of 32 elements (k / 32; block is a multiple
// of 32, so a block holds whole runs), zero past K:
//   a[r, k] ~ a_scale[r, k / 32] * aq[r, k],  a_scale = max|a| / qmax, codes rounded to
//   nearest even; qmax = 127 (int8 codes, for 4-bit weights) or kNbitsSplitQmax (8-bit
//   weights).
//   4-bit weights: aq as int8, 32 bytes per run.
//   8-bit weights ("split" A): aq = 256 h + l with l, h signed bytes (l in [-128, 127],
//     h in [-127, 127] as |aq| <= 32639), stored per run as l[32] then h[32]. Two VPDPBUSD of
//     one load of codes (against l and against h) give the int16-precision product without
//     widening the codes; the h sums are shifted by 8 once per run.
//   a_sum[r, u] = -(sum of aq over run u), an int32.
//   a_zero[r, u] = the int16 pair (l, h) with l + 128 h = a_sum[r, u], 0 <= l < 128.
// Then per run the zero point comes off in integers, exactly: with a uniform z the run's
// lanes start at z * a_sum; else one VPDPWSSD of the zeros' pairs with a_zero's adds
// z l + 128 z h = z * a_sum (128 z <= 32640 and |h| <= 8192 fit int16; a lane stays under
// 2^30). Exact matters: the float alternative,
// scale * a_scale * dot - zero * scale * sum(A), cancels two large terms, and with the
// outliers real activations have (x100-x1000) it moved SmolLM2 int8's decode-path perplexity
// by 0.4%. So, with dot = sum over the run of q * aq (at most 32 products of |255 * 32767|):
//   y[r, n] = sum_u scale[n, u * 32 / block] * a_scale[r, u] * (dot(q[n, u], aq[r, u]) - zero[n, u * 32 / block] * sum(aq[r, u])).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace octet::cpu {

constexpr int64_t kNbitsPanel = 16;  // columns per panel: one zmm of int32 lanes
// The largest code of split A (8-bit weights): 32639 = 127 * 256 + 127 keeps h a signed
// byte (32767 would need h = 128); its step is 0.4% coarser than int16's.
constexpr int kNbitsSplitQmax = 32639;

struct NbitsPacked {
  int bits = 4;
  int64_t N = 0, k_blocks = 0, block = 0, panels = 0;
  bool uniform_zero = false;  // every zero point is `zero`: none in the stream
  int32_t zero = 0;
  int64_t codes_bytes = 0;    // one panel's codes of one block: block * 16 * bits / 8
  int64_t block_bytes = 0;    // one panel's block in the stream: codes, scales, zeros
  Tensor stream;              // uint8, 64-byte aligned, panels * k_blocks * block_bytes
};

// From the file's layout (nbits_table.h): b [N, k_blocks, block * bits / 8], scales [N,
// k_blocks], zero points as integers [N, k_blocks].
NbitsPacked pack_nbits(int bits, int64_t N, int64_t k_blocks, int64_t block, const uint8_t* b, const float* scales,
                       const uint8_t* zeros);

struct NbitsPackedArgs {
  const NbitsPacked* w = nullptr;
  int64_t rows = 1;                 // 1..kNbitsMaxRows
  const int8_t* a = nullptr;        // int8 codes [rows, k_blocks * block] (bits 4) or split ones [rows, 2 k_blocks * block] (bits 8)
  const float* a_scales = nullptr;  // [rows, k_blocks * block / 32]
  const int32_t* a_sum = nullptr;   // [rows, k_blocks * block / 32]: -sum(aq)
  const int32_t* a_zero = nullptr;  // [rows, k_blocks * block / 32], int16 pairs
  float* y = nullptr;               // y[r * ldy + n - col0]
  int64_t ldy = 0;
  int64_t col0 = 0;                 // the first column y holds (a part of a split output; a multiple of 16)
};

// A's rows (length K, row stride lda) quantized as above into aq [rows, k_blocks * block]
// (split: [rows, 2 k_blocks * block]).
struct NbitsQuantizeArgs {
  const float* a = nullptr;
  int64_t rows = 1, K = 0, lda = 0, k_blocks = 0, block = 0;
  int qmax = 127;      // at most kNbitsSplitQmax; 127 where split (the int8 activations of Int8 mode)
  bool split = false;  // codes stored split, l[32] h[32] per run (the 8-bit weights' kernel reads those, whatever qmax)
  int8_t* aq = nullptr;
  float* a_scales = nullptr;
  int32_t* a_sum = nullptr;
  int32_t* a_zero = nullptr;
};

// One panel's weights dequantized to float, dst[k * ldd + c] = scale * (code - zero) for
// k < K and the panel's 16 columns c (padding columns: 0), computed as code * scale -
// zero * scale (one FMA where the ISA has it), as the file-layout dequantization
// (nbits_table.h) does. The prefill path's weights when the session keeps only the
// panels; ldd >= 16.
using NbitsPackedDequantFn = void (*)(const NbitsPacked& w, int64_t panel, int64_t K, float* dst, int64_t ldd);
void dequant_packed_panel_generic(const NbitsPacked& w, int64_t panel, int64_t K, float* dst, int64_t ldd);
void dequant_packed_panel_avx512(const NbitsPacked& w, int64_t panel, int64_t K, float* dst, int64_t ldd);

struct NbitsPackedKernels {
  void (*quantize)(const NbitsQuantizeArgs& q) = nullptr;
  // Panels p0 <= p < p1 of y, every row.
  void (*gemv)(const NbitsPackedArgs& g, int64_t p0, int64_t p1) = nullptr;
  NbitsPackedDequantFn dequant = nullptr;
};

// The inverse of pack_nbits: the file's layout back (b [N, k_blocks, block * bits / 8],
// scales [N, k_blocks], zero points as integers [N, k_blocks]), for a kernel that kept only
// the panels and hands its node to the reference kernel.
struct NbitsUnpacked {
  std::vector<uint8_t> b;
  std::vector<float> scales;
  std::vector<uint8_t> zeros;
};
NbitsUnpacked unpack_nbits(const NbitsPacked& w);

// The AVX512-VNNI kernels, or nulls where the CPU lacks them.
NbitsPackedKernels nbits_packed_kernels_vnni();

}  // namespace octet::cpu
