// The AVX-512 float32 panel GEMM (f32_panel_gemm.h).
//
// Why octet's own and not oneDNN's brgemm on the same packed B: in a transformer each
// weight matrix is read once per run and arrives cold (DINOv2-S: 85 MB of fp32 weights,
// 0.6-2.4 MB per matrix, against 2 MiB of L2 per core), and oneDNN 2.6's matmul, which
// exposes no prefetch control, ran DINOv2's shapes (257 rows) at 150-163 GMAC/s on
// rotating copies of B against 175-190 with B hot. This kernel prefetches the chunk of B
// it needs next while it multiplies the current one, a few lines per step of K.
// bench/cpp/f32_gemv.cpp's f32_panel_gemm (chains of products on 128 MiB of distinct
// weights, fastest of 2 runs) at 2 threads, oneDNN -> this kernel, in GMAC/s: DINOv2-S at
// 257 rows 384x1152 148 -> 165, 384x384 143 -> 162, the FFN pair 149 -> 165; MiniLM-L6's
// FFN at 128 rows 141 -> 148; 1 thread +5-10%.
//
// The register block: 6 rows x 64 columns = 24 accumulators, 4 registers of B per step of
// K and one broadcast of A per row: 24 FMAs per 4 loads of B and 6 broadcasts. A chunk of
// 128 rows of B (32 KiB) stays in L1 while all the row blocks pass; between chunks the
// block's partial sums go through Y (exact: float stores and loads).
// Compiled with the AVX-512 flags (file-name suffix, see CMakeLists.txt).
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/simd/f32_panel_gemm.h"

namespace octet::cpu {
namespace {

constexpr int W = kF32GemvPanel;
constexpr int64_t kLine = 64;

inline __mmask16 lanes(int64_t n) {
  return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// The next cache line of the chunk to prefetch, and the chunk's end.
struct Prefetch {
  const char* next = nullptr;
  const char* end = nullptr;
};

// One block of R rows against one chunk of kc rows of B. first: start from zero (else
// from Y's partial sums); last: add the bias and store the final values.
template <int R>
__attribute__((noinline)) void block(const float* a, int64_t lda, const float* b, int64_t kc, float* y, int64_t ldy,
                                     const __mmask16 (&mask)[4], bool first, bool last, const float* bias,
                                     Prefetch& pf, const char* pf_stop) {
  __m512 acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < 4; ++j)
      acc[r][j] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask[j], y + r * ldy + 16 * j);
  const char* p = pf.next;
  for (int64_t k = 0; k < kc; ++k, b += W) {
    if (p < pf_stop) {
      _mm_prefetch(p, _MM_HINT_T1);
      p += kLine;
    }
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
    const __m512 b2 = _mm512_loadu_ps(b + 32), b3 = _mm512_loadu_ps(b + 48);
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + k]);
      acc[r][0] = _mm512_fmadd_ps(b0, av, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(b1, av, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(b2, av, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(b3, av, acc[r][3]);
    }
  }
  pf.next = p;
  if (last && bias)
    for (int j = 0; j < 4; ++j) {
      const __m512 bj = _mm512_maskz_loadu_ps(mask[j], bias + 16 * j);
      for (int r = 0; r < R; ++r) acc[r][j] = _mm512_add_ps(acc[r][j], bj);
    }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < 4; ++j) _mm512_mask_storeu_ps(y + r * ldy + 16 * j, mask[j], acc[r][j]);
}

using BlockFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, const __mmask16 (&)[4], bool,
                         bool, const float*, Prefetch&, const char*);
constexpr BlockFn kBlocks[kF32GemmRows + 1] = {nullptr, block<1>, block<2>, block<3>, block<4>, block<5>, block<6>};
static_assert(kF32GemmRows == 6, "one block function per row count");

}  // namespace

void f32_panel_gemm_avx512(const F32PanelGemmArgs& g) {
  const __mmask16 mask[4] = {lanes(g.cols), lanes(g.cols - 16), lanes(g.cols - 32), lanes(g.cols - 48)};
  const int64_t blocks = (g.rows + kF32GemmRows - 1) / kF32GemmRows;
  for (int64_t k0 = 0; k0 < g.K; k0 += kF32GemmDepth) {
    const int64_t kc = std::min<int64_t>(kF32GemmDepth, g.K - k0);
    const bool first = k0 == 0, last = k0 + kc == g.K;
    // The chunk after this one: this panel's next, or the next panel's first.
    const float* after = !last ? g.b + (k0 + kc) * W : g.next_b;
    const int64_t after_rows = std::min<int64_t>(kF32GemmDepth, !last ? g.K - k0 - kc : g.K);
    Prefetch pf;
    int64_t per_block = 0;
    if (after) {
      pf.next = reinterpret_cast<const char*>(after);
      pf.end = pf.next + after_rows * W * static_cast<int64_t>(sizeof(float));
      per_block = ((pf.end - pf.next) / kLine + blocks - 1) / blocks;
    }
    for (int64_t r0 = 0; r0 < g.rows; r0 += kF32GemmRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kF32GemmRows, g.rows - r0));
      float* y = g.y + r0 * g.ldy;
      const char* stop = after ? std::min(pf.next + per_block * kLine, pf.end) : nullptr;
      kBlocks[rows](g.a + r0 * g.lda + k0, g.lda, g.b + k0 * W, kc, y, g.ldy, mask, first, last, g.bias, pf, stop);
      if (last && g.finish) g.finish(g.finish_context, y, g.ldy, r0, rows, g.cols);
    }
  }
}

}  // namespace octet::cpu
