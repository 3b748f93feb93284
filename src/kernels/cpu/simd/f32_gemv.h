// The float32 decode GEMV of MatMul / Gemm / octet.MatMulBias (dnnl_matmul_gemv.cpp): y = A B
// for a few rows of A and a constant B, reading B in the blocked layout oneDNN packed it into
// at session creation (so the weights live once; oneDNN's prefill reads the same copy).
// Kept free of heavy headers: the per-ISA translation unit includes it.
//
// Layout: B [K, N] as panels of kF32GemvPanel columns, each panel K_pad rows of
// kF32GemvPanel contiguous floats: element (k, n) at
//   b[(n / 64) * k_stride * 64 + k * 64 + n % 64],  k_stride = K_pad >= K.
// That is oneDNN 2.6's BA16a64b (what its AVX-512 brgemm matmul asks for float32 weights:
// 16-row blocks of 64 columns, the row blocks of one column block one after another) and
// its aB64b. Rows past K and columns past N are padding: the kernel never uses rows past K
// and never writes columns past N.
#pragma once

#include <cstdint>

namespace octet::cpu {

constexpr int kF32GemvPanel = 64;   // columns per panel
constexpr int kF32GemvMaxRows = 4;  // rows of A one pass over B serves (see dnnl_matmul_gemv.cpp)

struct F32GemvArgs {
  const float* b = nullptr;  // the panels above
  int64_t k_stride = 0;      // K_pad: rows per panel
  int64_t K = 0, N = 0;
  int64_t rows = 1;          // 1..kF32GemvMaxRows
  const float* a = nullptr;  // a[r * lda + k]
  int64_t lda = 0;
  float* y = nullptr;        // y[r * ldy + n]
  int64_t ldy = 0;
};

// Columns of panels [p0, p1) of y for every row of A: y[r, n] = sum_k a[r, k] b[k, n].
// Requires AVX-512F (the caller checks active_isa()).
void f32_gemv_avx512(const F32GemvArgs& g, int64_t p0, int64_t p1);

}  // namespace octet::cpu
