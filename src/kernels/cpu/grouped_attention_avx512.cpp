// octet.GroupedAttention / CachedAttention, AVX-512, head size 64 or 128: all the query
// heads of one key/value group at once (grouped_attention.cpp picks this where it fits).
//
// Why: at a decode step the generic row (one query head at a time) reads each key and
// value row once per query head of its group (SmolLM2: 3 times), ends every q . k_j in
// a horizontal sum, and accumulates y in memory, a store-to-load chain per key. Here the
// G heads' query rows and output accumulators live in registers (G * D / 16 of each), each
// key / value row is loaded once for the G heads, and y is stored once. The arithmetic is
// what gcc makes of the generic AVX-512 row, operation for operation: q . k_j as 16 lanes
// of FMAs over D, the lanes then added one by one in order (so each score is one short
// chain, overlapped across heads and keys), p_j v_j added over j in order by FMAs, then
// times 1 / sum. Software prefetch of the key and value rows measured 0.36-0.45 ms per
// SmolLM2 int4 step for the 30 layers against 0.60-0.78 without (profile, 1 thread, load 3).
// With gcc the outputs are the same bits (SmolLM2 int4/int8/fp32 decode:
// the same 48 greedy tokens); tests hold it to the reference within float rounding.

// gcc reports the intrinsics' own temporaries (_mm512_set1_ps and friends).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/grouped_attention_group.h"

namespace octet::cpu {
namespace {

constexpr int64_t kAhead = 8;  // key rows prefetched ahead (a prefetch past the cache is harmless)

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
  for (int64_t j = 0; j < T; ++j) {
    // The caches come from memory (a decode step's weight stream evicts them from the
    // caches): keys a few rows ahead, and the value rows the second loop will want.
    for (int u = 0; u < V; ++u) {
      _mm_prefetch(reinterpret_cast<const char*>(k + (j + kAhead) * D + 16 * u), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(v + j * D + 16 * u), _MM_HINT_T0);
    }
    __m512 kj[V];
    for (int u = 0; u < V; ++u) kj[u] = _mm512_loadu_ps(k + j * D + 16 * u);
    for (int h = 0; h < G; ++h) {
      __m512 acc = _mm512_mul_ps(q[h][0], kj[0]);
      for (int u = 1; u < V; ++u) acc = _mm512_fmadd_ps(q[h][u], kj[u], acc);
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, acc);
      float sum = 0.0f;  // lane by lane, in order: the generic row's reduction
      for (int l = 0; l < 16; ++l) sum += lanes[l];
      scores[h * T + j] = sum * c.scale;
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
    if (c.mask) {
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
