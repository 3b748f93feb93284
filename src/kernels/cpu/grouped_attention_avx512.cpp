// octet.GroupedAttention / CachedAttention, AVX-512, head size 64 or 128: all the query
// heads of one key/value group at once (grouped_attention.cpp picks this where it fits).
//
// Why: at a decode step the generic row (one query head at a time) reads each key and
// value row once per query head of its group (SmolLM2: 3 times), ends every q . k_j in
// a horizontal sum, and accumulates y in memory, a store-to-load chain per key. Here the
// G heads' query rows and output accumulators live in registers (G * D / 16 of each), each
// key / value row is loaded once for the G heads, and y is stored once. The scores go 16
// keys at a time: q . k_j as 16 lanes of FMAs over D for each of the 16 keys, then the 16
// horizontal sums in one transposing reduction (sum_lanes16), so the scale and an additive
// mask row apply to a whole zmm of scores. The lanes are added in the generic row's order,
// so the outputs are the same bits as before (SmolLM2 int4/int8/fp32: the same greedy tokens).
// p_j v_j is added over j in order by FMAs, then times 1 / sum. Against the scalar lane sums
// (session 13, SmolLM2 decode shapes, 30 layers, caches in L2/L3, 1 thread, load 11):
// 5.7 -> 4.3 us per layer at T 129, 8.2 -> 5.8 at 192, 10.7 -> 7.8 at 256; with the caches
// evicted to DRAM both take about the same time (9-19 us: memory-bound).
// Software prefetch of the key and value rows measured 0.36-0.45 ms per SmolLM2 int4 step
// for the 30 layers against 0.60-0.78 without (profile, 1 thread, load 3).

// gcc reports the intrinsics' own temporaries (_mm512_set1_ps and friends).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/grouped_attention_group.h"
#include "kernels/cpu/simd/transpose16_avx512.h"

namespace octet::cpu {
namespace {

constexpr int kBlock = 16;  // keys per score block: one zmm of scores
// The caches come from memory (a decode step's weight stream evicts them from the caches):
// keys are prefetched this many rows ahead (a prefetch past the cache is harmless), value
// rows as the scores of their keys are computed, for the second loop.
constexpr int64_t kAhead = 16;

// Lane j of the result is the sum of the 16 lanes of a[j], added lane by lane in order
// (0 + lane 0 + lane 1 + ... + lane 15), exactly as the generic row and the scalar loop this
// replaces add them, so the scores keep their bits: the 16 vectors are transposed (a 16x16
// transpose in 64 shuffles) and the transposed rows added in order, 16 keys at a time,
// instead of 16 stores and 256 scalar adds. (A reassociating tree reduction is cheaper
// still, but it moved a near-tie of SmolLM2 int4's greedy tokens.)
__attribute__((always_inline)) inline __m512 sum_lanes16(const __m512 (&a)[kBlock]) {
  __m512i col[16];  // after the transpose, col[c] lane j: lane c of a[j]
  for (int j = 0; j < 16; ++j) col[j] = _mm512_castps_si512(a[j]);
  transpose16x16_epi32(col);
  __m512 sum = _mm512_setzero_ps();
  for (int c = 0; c < 16; ++c) sum = _mm512_add_ps(sum, _mm512_castsi512_ps(col[c]));
  return sum;
}

template <int D, int G>
void group_rows(const GroupedAttentionCall& c, const VecTable& vec, int64_t b, int64_t g, int64_t i, float* scores,
                float* y) {
  constexpr int V = D / 16;  // zmm per row
  const int64_t T = c.kv_len, h0 = g * G;
  const float* k = c.k + b * c.k_b + g * c.k_g;
  const float* v = c.v + b * c.v_b + g * c.v_g;
  __m512 q[G][V];
  for (int h = 0; h < G; ++h)
    for (int u = 0; u < V; ++u) q[h][u] = _mm512_loadu_ps(c.q + ((b * c.heads + h0 + h) * c.q_len + i) * D + 16 * u);
  // A mask row read with the scores (before any keep fill it would have to follow).
  const float* mask_row = c.mask && !c.keep && c.m_str[3] == 1
                              ? c.mask + b * c.m_str[0] + i * c.m_str[2]
                              : nullptr;
  const __m512 scale = _mm512_set1_ps(c.scale);
  for (int64_t j0 = 0; j0 < T; j0 += kBlock) {
    const int n = static_cast<int>(std::min<int64_t>(kBlock, T - j0));
    const float* kb = k + j0 * D;
    const __mmask16 live = n == kBlock ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
    for (int h = 0; h < G; ++h) {
      __m512 acc[kBlock];
      for (int r = 0; r < kBlock; ++r) {
        if (r >= n) {  // past the last key (the cache may end here): adds nothing
          acc[r] = _mm512_setzero_ps();
          continue;
        }
        if (h == 0)  // the first head's pass: one key and one value row prefetched per key
          for (int u = 0; u < V; ++u) {
            _mm_prefetch(reinterpret_cast<const char*>(kb + (kAhead + r) * D + 16 * u), _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char*>(v + (j0 + r) * D + 16 * u), _MM_HINT_T0);
          }
        acc[r] = _mm512_mul_ps(q[h][0], _mm512_loadu_ps(kb + r * D));
        for (int u = 1; u < V; ++u) acc[r] = _mm512_fmadd_ps(q[h][u], _mm512_loadu_ps(kb + r * D + 16 * u), acc[r]);
      }
      __m512 s = _mm512_mul_ps(sum_lanes16(acc), scale);
      if (mask_row) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(live, mask_row + (h0 + h) * c.m_str[1] + j0));
      _mm512_mask_storeu_ps(scores + h * T + j0, live, s);
    }
  }
  float inv[G];
  for (int h = 0; h < G; ++h) {
    float* s = scores + h * T;
    if (c.keep) {
      const uint8_t* keep = c.keep + b * c.k_str[0] + (h0 + h) * c.k_str[1] + i * c.k_str[2];
      for (int64_t j = 0; j < T; ++j)
        if (!keep[j * c.k_str[3]]) s[j] = c.fill;
    }
    if (c.mask && !mask_row) {
      const float* m = c.mask + b * c.m_str[0] + (h0 + h) * c.m_str[1] + i * c.m_str[2];
      for (int64_t j = 0; j < T; ++j) s[j] += m[j * c.m_str[3]];
    }
    const float mx = vec.max(s, T);
    inv[h] = 1.0f / vec.exp_sum(s, 1.0f, mx, s, T);
  }
  __m512 acc[G][V];
  for (int h = 0; h < G; ++h)
    for (int u = 0; u < V; ++u) acc[h][u] = _mm512_setzero_ps();
  for (int64_t j = 0; j < T; ++j) {
    __m512 vj[V];
    for (int u = 0; u < V; ++u) vj[u] = _mm512_loadu_ps(v + j * D + 16 * u);
    for (int h = 0; h < G; ++h) {
      const __m512 p = _mm512_set1_ps(scores[h * T + j]);
      for (int u = 0; u < V; ++u) acc[h][u] = _mm512_fmadd_ps(p, vj[u], acc[h][u]);
    }
  }
  // Y is [B, S, H * D]: the G heads' rows sit side by side.
  for (int h = 0; h < G; ++h)
    for (int u = 0; u < V; ++u) _mm512_storeu_ps(y + h * D + 16 * u, _mm512_mul_ps(acc[h][u], _mm512_set1_ps(inv[h])));
}

}  // namespace

GroupRowsFn group_rows_avx512(int64_t head_size, int64_t heads_per_group) {
  if (head_size == 64) {
    switch (heads_per_group) {
      case 1: return group_rows<64, 1>;
      case 2: return group_rows<64, 2>;
      case 3: return group_rows<64, 3>;
      case 4: return group_rows<64, 4>;
      default: return nullptr;
    }
  }
  if (head_size == 128) {
    switch (heads_per_group) {
      case 1: return group_rows<128, 1>;
      case 2: return group_rows<128, 2>;
      default: return nullptr;
    }
  }
  return nullptr;
}

}  // namespace octet::cpu
