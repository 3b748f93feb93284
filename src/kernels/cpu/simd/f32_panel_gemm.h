// The float32 GEMM of MatMul / Gemm / octet.MatMulBias past the decode GEMV's few rows
// (dnnl_matmul_panel_gemm.cpp): Y = A B (+ bias) for a constant B read in the 64-column
// panels oneDNN packed it into at session creation (f32_gemv.h's layout; one copy of the
// weights serves the GEMV, this GEMM and oneDNN's matmul). Kept free of heavy headers: the
// per-ISA translation unit includes it.
//
// One call computes one panel (up to 64 columns) of Y for a range of A's rows: the panel's
// rows of B in chunks of kF32GemmDepth (32 KiB, held in L1 while every block of
// kF32GemmRows rows of A meets it in 6 x 4 accumulator registers), and while one chunk is
// in use the next one (of this panel, or the first of `next_b`) is prefetched a few lines
// per step. Each output is summed over K in order, whatever the rows, panels or threads.
#pragma once

#include <cstdint>

#include "kernels/cpu/simd/f32_gemv.h"

namespace octet::cpu {

constexpr int kF32GemmRows = 6;     // rows of A per register block
constexpr int kF32GemmDepth = 128;  // rows of a panel per chunk: 128 x 256 bytes = 32 KiB

// Called after a block of rows got its last chunk (bias included), while it is in L1: the
// rest of the epilogue (activation, residual). `row` counts from the call's first row.
using F32GemmFinish = void (*)(void* context, float* y, int64_t ldy, int64_t row, int64_t rows, int64_t cols);

struct F32PanelGemmArgs {
  const float* a = nullptr;  // a[r * lda + k], r < rows
  int64_t lda = 0;
  int64_t rows = 0;
  int64_t K = 0;
  const float* b = nullptr;       // the panel: K_pad rows of kF32GemvPanel floats
  const float* next_b = nullptr;  // the panel the caller runs next (prefetched), or null
  float* y = nullptr;             // y[r * ldy + c], c < cols
  int64_t ldy = 0;
  int64_t cols = 0;               // 1..kF32GemvPanel
  const float* bias = nullptr;    // cols values added to every row, or null
  F32GemmFinish finish = nullptr;
  void* finish_context = nullptr;
};

// Requires AVX-512F (the caller checks active_isa()).
void f32_panel_gemm_avx512(const F32PanelGemmArgs& g);

}  // namespace octet::cpu
