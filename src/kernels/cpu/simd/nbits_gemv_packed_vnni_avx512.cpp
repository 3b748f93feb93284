// The integer MatMulNBits decode GEMV on the panel layout (nbits_packed.h), AVX512-VNNI:
//   4-bit weights x int8 A: VPDPBUSD, the codes (0..15, unsigned) against signed int8 A.
//     One 64-byte load is 16 columns x 8 values of k: its low nibbles meet A[k..k+3] and its
//     high nibbles A[k+4..k+7], each a 4-byte broadcast from memory.
//   8-bit weights x split A: VPDPBUSD twice per 64-byte load (16 columns x 4 values of k),
//     the codes as they are (0..255, unsigned) against A's low bytes and against its high
//     bytes; the high sums are shifted by 8 once per run. 16-bit activations keep the float
//     path's accuracy (int8 ones cost +0.26% perplexity on SmolLM2's int8 decode,
//     matmul_nbits.h) with no widening of the codes: the int16 form (VPDPWSSD) needed a mask
//     and a shift per load and 2 more instructions per 64 bytes.
// Per run of 32 values of k the zero point comes off in integers (nbits_packed.h), then the
// int32 lanes become floats and meet the block scale times the run's activation scale.
// Several independent int32 accumulators per run keep the dot-product chains short; runs
// are independent of each other, so out-of-order execution overlaps them.
#pragma GCC target("avx512vnni")
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/simd/nbits_packed.h"
#include "kernels/cpu/simd/nbits_table.h"

namespace octet::cpu {
namespace {

template <typename T>
inline __m512i broadcast4(const T* p) {  // 4 bytes of A in every lane (folds into the dot product's operand)
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Software prefetch this far ahead of the weight stream (a prefetch past the end is
// harmless). One thread alone streams at ~35-40 GB/s on the test EPYC only with many
// misses in flight; the dot products fill the out-of-order window and hold fewer. 4 KiB
// measured 1.2-1.5x over none and over 1 KiB on the LM head (bench/cpp/decode_bandwidth).
constexpr int64_t kPrefetchBytes = 4096;

inline __mmask16 first_lanes(int64_t n) { return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << std::max<int64_t>(n, 0)) - 1); }

void quantize(const NbitsQuantizeArgs& q) {
  const int64_t kp = q.k_blocks * q.block, runs = kp / 32, per_block = q.block / 32;
  const __m512i hi = _mm512_set1_epi32(q.qmax), lo = _mm512_set1_epi32(-q.qmax);
  const __m512 sign = _mm512_set1_ps(-0.0f);
  const int64_t row_bytes = q.split ? 2 * kp : kp;
  for (int64_t r = 0; r < q.rows; ++r) {
    const float* a = q.a + r * q.lda;
    for (int64_t b = 0; b < q.k_blocks; ++b) {
      for (int64_t v = 0; v < per_block; ++v) {
        const int64_t u = b * per_block + v, k = u * 32, len = std::clamp<int64_t>(q.K - k, 0, 32);
        const __m512 x0 = _mm512_maskz_loadu_ps(first_lanes(len), a + k);
        const __m512 x1 = _mm512_maskz_loadu_ps(first_lanes(len - 16), a + k + 16);
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, x0), _mm512_andnot_ps(sign, x1)));
        const float inv = amax > 0.0f ? static_cast<float>(q.qmax) / amax : 0.0f;
        // Rounded to nearest even (the default MXCSR mode), as std::nearbyint does.
        const __m512i c0 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(x0, _mm512_set1_ps(inv))), lo), hi);
        const __m512i c1 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(x1, _mm512_set1_ps(inv))), lo), hi);
        const int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(c0, c1));
        if (!q.split) {
          int8_t* dst = q.aq + r * row_bytes + k;
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm512_cvtepi32_epi8(c0));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16), _mm512_cvtepi32_epi8(c1));
        } else {
          // aq = 256 h + l: l the sign-extended low byte, h the exact rest.
          int8_t* dst = q.aq + r * row_bytes + 2 * k;
          const __m512i l0 = _mm512_srai_epi32(_mm512_slli_epi32(c0, 24), 24);
          const __m512i l1 = _mm512_srai_epi32(_mm512_slli_epi32(c1, 24), 24);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm512_cvtepi32_epi8(l0));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16), _mm512_cvtepi32_epi8(l1));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 32), _mm512_cvtepi32_epi8(_mm512_srai_epi32(_mm512_sub_epi32(c0, l0), 8)));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 48), _mm512_cvtepi32_epi8(_mm512_srai_epi32(_mm512_sub_epi32(c1, l1), 8)));
        }
        q.a_scales[r * runs + u] = amax / static_cast<float>(q.qmax);
        q.a_sum[r * runs + u] = -sum;
        const int32_t l = -sum & 127, h = (-sum - l) / 128;  // -sum = l + 128 h
        q.a_zero[r * runs + u] = static_cast<int32_t>(static_cast<uint32_t>(l) | static_cast<uint32_t>(h) << 16);
      }
    }
  }
}

// One run of 32 values of k for 16 columns and R rows: the int32 dot products.
// dot[r] comes in holding the run's zero-point term and leaves with the run's sums added.
template <int R>
inline void run_int4(const uint8_t* q, const int8_t* a, int64_t a_row, __m512i (&dot)[R]) {
  const __m512i low = _mm512_set1_epi8(0x0f);
  __m512i d[2][R];
  for (int r = 0; r < R; ++r) d[0][r] = dot[r], d[1][r] = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    const __m512i w = _mm512_load_si512(q + 64 * g);
    const __m512i wl = _mm512_and_si512(w, low), wh = _mm512_and_si512(_mm512_srli_epi16(w, 4), low);
    for (int r = 0; r < R; ++r) {
      d[0][r] = _mm512_dpbusd_epi32(d[0][r], wl, broadcast4(a + r * a_row + 8 * g));
      d[1][r] = _mm512_dpbusd_epi32(d[1][r], wh, broadcast4(a + r * a_row + 8 * g + 4));
    }
  }
  for (int r = 0; r < R; ++r) dot[r] = _mm512_add_epi32(d[0][r], d[1][r]);
}

// a: the run's split A, l[32] then h[32]; |sum of h products| <= 32 * 255 * 127, so the
// shifted h sums stay far inside int32.
template <int R>
inline void run_int8(const uint8_t* q, const int8_t* a, int64_t a_row, __m512i (&dot)[R]) {
  __m512i dl[2][R], dh[2][R];
  for (int r = 0; r < R; ++r) dl[0][r] = dot[r], dl[1][r] = dh[0][r] = dh[1][r] = _mm512_setzero_si512();
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) {  // 4 values of k per column and load
    const __m512i w = _mm512_load_si512(q + 64 * g);
    for (int r = 0; r < R; ++r) {
      dl[g & 1][r] = _mm512_dpbusd_epi32(dl[g & 1][r], w, broadcast4(a + r * a_row + 4 * g));
      dh[g & 1][r] = _mm512_dpbusd_epi32(dh[g & 1][r], w, broadcast4(a + r * a_row + 32 + 4 * g));
    }
  }
  for (int r = 0; r < R; ++r)
    dot[r] = _mm512_add_epi32(_mm512_add_epi32(dl[0][r], dl[1][r]),
                              _mm512_slli_epi32(_mm512_add_epi32(dh[0][r], dh[1][r]), 8));
}

// Uniform: every zero point is w.zero (nbits_packed.h), none in the stream.
template <int R, int Bits, bool Uniform>
void gemv(const NbitsPackedArgs& g, int64_t p0, int64_t p1) {
  const NbitsPacked& w = *g.w;
  const int64_t kp = w.k_blocks * w.block, runs = kp / 32, per_block = w.block / 32;
  constexpr int64_t run_bytes = 32 * kNbitsPanel * Bits / 8;  // one run of one panel
  constexpr int64_t a_run = Bits == 4 ? 32 : 64;               // one run of one row of A
  const int64_t a_row = runs * a_run, block_bytes = w.block_bytes;
  for (int64_t p = p0; p < p1; ++p) {
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    const uint8_t* q = w.stream.raw() + p * w.k_blocks * block_bytes;
    for (int64_t b = 0; b < w.k_blocks; ++b, q += block_bytes) {
      for (int64_t l = 0; l < block_bytes; l += 64)
        _mm_prefetch(reinterpret_cast<const char*>(q + kPrefetchBytes + l), _MM_HINT_T0);
      const __m512 s = _mm512_load_ps(q + w.codes_bytes);
      __m512i z;
      if constexpr (!Uniform) z = _mm512_load_si512(q + w.codes_bytes + 64);
      for (int64_t v = 0; v < per_block; ++v) {
        const int64_t u = b * per_block + v;
        __m512i dot[R];
        for (int r = 0; r < R; ++r) {
          if constexpr (Uniform) dot[r] = _mm512_set1_epi32(w.zero * g.a_sum[r * runs + u]);
          else dot[r] = _mm512_dpwssd_epi32(_mm512_setzero_si512(), z, _mm512_set1_epi32(g.a_zero[r * runs + u]));
        }
        if constexpr (Bits == 4) run_int4<R>(q + v * run_bytes, g.a + u * a_run, a_row, dot);
        else run_int8<R>(q + v * run_bytes, g.a + u * a_run, a_row, dot);
        for (int r = 0; r < R; ++r)
          acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[r]), _mm512_mul_ps(s, _mm512_set1_ps(g.a_scales[r * runs + u])),
                                   acc[r]);
      }
    }
    const int64_t n0 = p * kNbitsPanel;
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(g.y + r * g.ldy + (n0 - g.col0), first_lanes(w.N - n0), acc[r]);
  }
}

template <int Bits, bool Uniform>
void gemv_rows(const NbitsPackedArgs& g, int64_t p0, int64_t p1) {
  static_assert(kNbitsMaxRows == 4, "one case per row count");
  switch (g.rows) {
    case 1: return gemv<1, Bits, Uniform>(g, p0, p1);
    case 2: return gemv<2, Bits, Uniform>(g, p0, p1);
    case 3: return gemv<3, Bits, Uniform>(g, p0, p1);
    default: return gemv<4, Bits, Uniform>(g, p0, p1);
  }
}

void gemv_any(const NbitsPackedArgs& g, int64_t p0, int64_t p1) {
  const bool uniform = g.w->uniform_zero;
  if (g.w->bits == 4) return uniform ? gemv_rows<4, true>(g, p0, p1) : gemv_rows<4, false>(g, p0, p1);
  uniform ? gemv_rows<8, true>(g, p0, p1) : gemv_rows<8, false>(g, p0, p1);
}

}  // namespace
NbitsPackedKernels nbits_packed_kernels_vnni() {
  if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl"))
    return {};
  return {quantize, gemv_any, dequant_packed_panel_avx512};
}

}  // namespace octet::cpu
