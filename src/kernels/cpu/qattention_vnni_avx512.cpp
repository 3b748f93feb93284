// The AVX512-VNNI task of octet.QAttention: the same results as the other levels' task
// (qattention_impl.h; same integers, same float products, same softmax), faster:
//
// - Q.K^T in bytes, VPDPBUSD (four u8 x s8 products summed into an int32 lane: twice
//   VPDPWSSD's work per instruction). Centered values span 255 levels but need not fit a
//   byte (q - zp is in [lo, lo + 255]), so Q is stored as qu = qc - lo_q in [0, 255] and K
//   as ks = kc - lo_k - 128 in [-128, 127], and the exact sum is restored in int32:
//     sum qc * kc = sum qu * ks + ck * sum qu + lo_q * sum ks + Dk * lo_q * ck,
//   ck = lo_k + 128: a term per query row (rowc) and one per key (kcol), added before the
//   conversion to float. The lanes wrap modulo 2^32, and the true sum fits int32 (the
//   driver checks), so the result is the exact sum.
// - P.V in bytes too. P is never negative (a probability, or exp(s - max), rounded), but
//   has up to 4095 levels (16-bit P), so it is taken as P = 256 ph + pl, its int16's two
//   bytes (a shuffle of each broadcast picks four keys' low or high bytes), and V stored
//   as vs = vc - lo_v - 128 like K:
//     sum P vc = sum pl vs + 256 sum ph vs + cv * sum P,   cv = lo_v + 128.
//   ph is nonzero only where exp(s - max) >= 256 p_scale (1/16 of the row's peak with
//   4095 levels), so the ph product runs only over the groups of four keys where one of
//   the tile's rows has such a P; 8-bit P never does. In the common case P.V then costs
//   about half of VPDPWSSD's instructions.
// - Register tiles of 4 query rows x 64 columns (16 accumulators: VPDP* latency is hidden
//   and each loaded K/V vector serves four rows) for both products.
// - The mask add and each row's maximum ride on the score blocks (no separate passes over
//   the scores); the division of the outputs by the row sums is vectorized. The softmax's
//   exp and P's quantization stay two tight passes as on the other levels (exp_sum, the
//   vec table's with a leaner exp, then the AVX-512 quantize to int16): one loop doing
//   both measured 1.3x slower.
// qattention.cpp picks this task at the AVX-512 level where CPUID reports AVX512-VNNI
// (and tests have not turned it off, see qattn::set_vnni_allowed).
#pragma GCC target("avx512vnni")

#include "kernels/cpu/qattention_bytes_avx512.h"
#include "kernels/cpu/simd/traits_avx512.h"
#include "kernels/cpu/simd/vec_impl.h"

namespace octet::cpu::qattn {
namespace {

using Base = Kernel<Avx512Int>;
using F = simd::Avx512Traits;

constexpr int64_t kR = 4;  // query rows per tile (divides kBlockRows)
constexpr int kMaxN = 4;   // 16-lane columns per tile: 64 keys or value channels
static_assert(kBlockRows % kR == 0 && kR <= kMaxTileRows);


// The tile's query rows for the score blocks: bytes q[r] with constant terms rowc[r];
// with fuse, the blocks also add the mask rows (when given) and keep each row's running
// maximum over keys < Sk (lane-wise, in vmax).
struct TileQ {
  const uint8_t* q[kR];
  int32_t rowc[kR];
  bool fuse;
  const float* mask[kR];  // null: no mask
  __m512 vmax[kR];
};

// Scores of the tile's rows against keys [j0, j0 + 16 N):
// s[r][j] = scale * (qk_scale * float(exact sum)) (+ mask[r][j] with fuse), for r < rows.
template <int N>
void scores_block(const Args& p, const Scratch& w, TileQ& tq, int64_t j0, int64_t rows) {
  const uint8_t* const* q = tq.q;
  const int32_t* rowc = tq.rowc;
  // Narrow tails (N <= 2: 4 or 8 accumulators, too few chains to hide VPDPBUSD's latency)
  // sum even and odd channel quads apart.
  constexpr int S = N <= 2 ? 2 : 1;
  __m512i acc[S][kR][N];
#pragma GCC unroll 16
  for (int n = 0; n < N; ++n) {
    const __m512i c = _mm512_loadu_si512(w.kcol + j0 + 16 * n);
#pragma GCC unroll 16
    for (int64_t r = 0; r < kR; ++r) {
      acc[0][r][n] = _mm512_add_epi32(c, _mm512_set1_epi32(rowc[r]));
      if constexpr (S == 2) acc[S - 1][r][n] = _mm512_setzero_si512();
    }
  }
  auto quad = [&](int set, int64_t g) {
    const int8_t* k = w.kt8 + 4 * (g * p.skp + j0);
    __m512i kv[N];
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) kv[n] = _mm512_loadu_si512(k + 64 * n);
#pragma GCC unroll 16
    for (int64_t r = 0; r < kR; ++r) {
      const __m512i qv = bcast4(q[r] + 4 * g);
#pragma GCC unroll 16
      for (int n = 0; n < N; ++n) acc[set][r][n] = dpbusd(acc[set][r][n], qv, kv[n]);
    }
  };
  const int64_t quads = p.dk4 / 4;
  int64_t g = 0;
  for (; g + S <= quads; g += S)
#pragma GCC unroll 2
    for (int set = 0; set < S; ++set) quad(set, g + set);
  if (g < quads) quad(0, g);
  if constexpr (S == 2) {
#pragma GCC unroll 16
    for (int64_t r = 0; r < kR; ++r)
#pragma GCC unroll 16
      for (int n = 0; n < N; ++n) acc[0][r][n] = _mm512_add_epi32(acc[0][r][n], acc[1][r][n]);
  }
  const __m512 m1 = _mm512_set1_ps(p.qk_scale), m2 = _mm512_set1_ps(p.scale);
#pragma GCC unroll 16
  for (int64_t r = 0; r < rows; ++r)
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) {
      const int64_t j = j0 + 16 * n;
      __m512 s = _mm512_mul_ps(m2, _mm512_mul_ps(m1, _mm512_cvtepi32_ps(acc[0][r][n])));
      if (tq.fuse) {
        const __mmask16 real = lanes(p.kv_len - j);
        if (tq.mask[r]) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(real, tq.mask[r] + j));
        tq.vmax[r] = _mm512_mask_max_ps(tq.vmax[r], real, tq.vmax[r], s);
      }
      _mm512_storeu_ps(w.s + r * p.skp + j, s);
    }
}

// The tile's P rows (int16, p.skq apart, zeros from Sk to sk4), each row's sum of P, and
// the groups of four keys where some row has P >= 256.
struct TileP {
  const int16_t* pr[kR];
  int32_t rowv[kR];  // cv * sum of the row's P
  float sums[kR];    // the softmax sums (row_probabilities divides by them)
  int64_t hi_count;
  uint16_t* hi;  // hi_count group indices
};

// y rows i.. = out_scale * float(P rows . V) for value channels [d0, d0 + 16 N) (divided
// by the row sums with row_probabilities), for r < rows.
template <int N>
void output_block(const Args& p, const Scratch& w, const TileP& t, int64_t b, int64_t h, int64_t i, int64_t d0,
                  int64_t rows) {
  __m512i acc[kR][N];
#pragma GCC unroll 16
  for (int64_t r = 0; r < kR; ++r)
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) acc[r][n] = _mm512_setzero_si512();
  // Each dword lane: the low (or high) bytes of four keys' P, from their 8 bytes broadcast.
  const __m512i lo = _mm512_set1_epi32(0x06040200), hi = _mm512_set1_epi32(0x07050301);
  auto group = [&](__m512i pick, int64_t g) {
    const int8_t* v = w.vt8 + 4 * (g * p.dvp + d0);
    __m512i vv[N];
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) vv[n] = _mm512_loadu_si512(v + 64 * n);
#pragma GCC unroll 16
    for (int64_t r = 0; r < kR; ++r) {
      int64_t quad;
      __builtin_memcpy(&quad, t.pr[r] + 4 * g, 8);
      const __m512i pv = _mm512_shuffle_epi8(_mm512_set1_epi64(quad), pick);
#pragma GCC unroll 16
      for (int n = 0; n < N; ++n) acc[r][n] = dpbusd(acc[r][n], pv, vv[n]);
    }
  };
  if (t.hi_count > 0) {  // 256 sum ph vs first, then the pl products on top of it
    for (int64_t k = 0; k < t.hi_count; ++k) group(hi, t.hi[k]);
#pragma GCC unroll 16
    for (int64_t r = 0; r < kR; ++r)
#pragma GCC unroll 16
      for (int n = 0; n < N; ++n) acc[r][n] = _mm512_slli_epi32(acc[r][n], 8);
  }
  for (int64_t g = 0; g < p.sk4 / 4; ++g) group(lo, g);
  const __m512 m = _mm512_set1_ps(p.out_scale);
#pragma GCC unroll 16
  for (int64_t r = 0; r < rows; ++r) {
    float* y = p.y + b * p.y_b + (i + r) * p.y_s + h * p.head_v + d0;
    const __m512 sum = _mm512_set1_ps(t.sums[r]);
    const __m512i rowv = _mm512_set1_epi32(t.rowv[r]);
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) {
      __m512 out = _mm512_mul_ps(m, _mm512_cvtepi32_ps(_mm512_add_epi32(acc[r][n], rowv)));
      if (p.row_probabilities) out = _mm512_div_ps(out, sum);
      const int64_t width = p.head_v - d0 - 16 * n;
      if (width >= 16) _mm512_storeu_ps(y + 16 * n, out);
      else _mm512_mask_storeu_ps(y + 16 * n, lanes(width), out);
    }
  }
}

// exp(x) for x <= 0 or NaN: vec_impl.h's exp_flush without its two guards that cannot
// matter here -- the clamp at 88 (x <= 0) and the 0 below exp(-87), where this gives
// exp(-87) ~ 1.6e-38 instead: that quantizes to P = 0 all the same, and leaves the row's
// sum as it is (the sum holds the row maximum's exp(0) = 1, and terms below half an ulp
// of it change nothing, in any order). 14 vector ops instead of 17; 12% faster rows.
__m512 exp_nonpositive(__m512 x) {
  const __m512 c = _mm512_max_ps(_mm512_set1_ps(-87.0f), x);
  const __m512 nf = F::round(_mm512_mul_ps(c, _mm512_set1_ps(1.44269504088896341f)));
  __m512 r = _mm512_fmadd_ps(nf, _mm512_set1_ps(-0.693359375f), c);
  r = _mm512_fmadd_ps(nf, _mm512_set1_ps(2.12194440e-4f), r);
  return F::scale_pow2(simd::Math<F>::exp_reduced(r), nf);
}

// y = exp(x - max) over a row of n, returns the sum: vec_impl.h's row_exp_sum (the same
// four partial sums in the same order) with exp_nonpositive, so the same floats.
float exp_sum(const float* x, float max, float* y, int64_t n) {
  const __m512 one = F::set1(1.0f), shift = F::set1(-max);
  auto e_at = [&](int64_t i) {
    const __m512 e = exp_nonpositive(F::fmadd(F::load(x + i), one, shift));
    F::store(y + i, e);
    return e;
  };
  __m512 s0 = F::set1(0.0f), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    s0 = F::add(s0, e_at(i));
    s1 = F::add(s1, e_at(i + 16));
    s2 = F::add(s2, e_at(i + 32));
    s3 = F::add(s3, e_at(i + 48));
  }
  for (; i + 16 <= n; i += 16) s0 = F::add(s0, e_at(i));
  if (i < n) {  // lanes past n read -inf
    const __m512 e = exp_nonpositive(F::fmadd(F::load_tail(x + i, n - i, -__builtin_inff()), one, shift));
    F::store_tail(y + i, e, n - i);
    s1 = F::add(s1, e);
  }
  return F::reduce_add(F::add(F::add(s0, s1), F::add(s2, s3)));
}

// Over a P row (int16 >= 0, zeros from n to sk4): returns sum P, and ORs into hi[c] the
// groups of four keys among keys [32 c, 32 c + 32) that hold a P >= 256 (bit g % 8).
int32_t p_terms(const int16_t* pc, int64_t sk4, uint8_t* hi) {
  const __m512i ones = _mm512_set1_epi16(1), high = _mm512_set1_epi16(static_cast<int16_t>(0xFF00));
  __m512i sum = _mm512_setzero_si512();
  for (int64_t i = 0; i < sk4; i += 32) {
    const int64_t left = sk4 - i;
    const __mmask32 m = left >= 32 ? ~__mmask32{0} : (__mmask32{1} << left) - 1;
    const __m512i v = _mm512_maskz_loadu_epi16(m, pc + i);
    sum = _mm512_add_epi32(sum, _mm512_madd_epi16(v, ones));
    hi[i / 32] |= static_cast<uint8_t>(_mm512_test_epi64_mask(v, high));
  }
  return _mm512_reduce_add_epi32(sum);
}

// Scores, softmax and quantized P of `rows` query rows from i, into t (and w's P rows).
void probabilities(const Args& p, int64_t b, int64_t h, int64_t i, int64_t rows, Scratch& w, TileP& t) {
  const ByteTerms bt(p);
  TileQ tq;
  const uint8_t** q = tq.q;
  int32_t* rowc = tq.rowc;
  const float* qrows = p.q + b * p.q_b + h * p.head_k;
  for (int64_t r = rows; r < 2 * kR && i + r < p.q_len; ++r) prefetch(qrows + (i + r) * p.q_s, p.head_k);
  for (int64_t r = 0; r < rows; ++r) {
    int8_t* dst = reinterpret_cast<int8_t*>(w.q8 + r * p.dk4);
    const int32_t sum = quantize_bytes<true>(qrows + (i + r) * p.q_s, p.head_k, p.qq, bt.q_lo, dst, p.dk4);
    rowc[r] = static_cast<int32_t>(static_cast<uint32_t>(bt.ck) * static_cast<uint32_t>(sum));
  }
  for (int64_t r = 0; r < kR; ++r) {  // a short tile repeats its last row
    q[r] = w.q8 + (r < rows ? r : rows - 1) * p.dk4;
    rowc[r] = rowc[r < rows ? r : rows - 1];
  }
  // The mask add and the row maximum ride on the score blocks unless causal rows (filled
  // after the scores) or a mask strided along keys need the separate passes.
  tq.fuse = !p.causal && (!p.mask || p.m_k == 1);
  for (int64_t r = 0; r < kR; ++r) {
    tq.mask[r] = p.mask && r < rows ? p.mask + b * p.m_b + h * p.m_h + (i + r) * p.m_q : nullptr;
    tq.vmax[r] = _mm512_set1_ps(-__builtin_inff());
  }
  int64_t j0 = 0;
  for (; j0 + 16 * kMaxN <= p.skp; j0 += 16 * kMaxN) scores_block<kMaxN>(p, w, tq, j0, rows);
  switch ((p.skp - j0) / 16) {
    case 3: scores_block<3>(p, w, tq, j0, rows); break;
    case 2: scores_block<2>(p, w, tq, j0, rows); break;
    case 1: scores_block<1>(p, w, tq, j0, rows); break;
    default: break;
  }
  uint8_t* chunks = w.chunks;  // per 32 keys, the groups with a P >= 256 in some row
  for (int64_t c = 0; c < p.skq / 32; ++c) chunks[c] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = w.s + r * p.skp;
    mask_score_row(p, b, h, i + r, /*add_mask=*/!tq.fuse, row);
    const float max = tq.fuse ? _mm512_reduce_max_ps(tq.vmax[r]) : p.vec->max(row, p.kv_len);
    int16_t* pc = w.pc + r * p.skq;
    // The vectorized softmax's steps, then P (row_probabilities: e itself, the output is
    // divided by the sum; otherwise e * (1 / sum)) quantized and split.
    t.sums[r] = exp_sum(row, max, row, p.kv_len);
    Base::quantize_row(row, p.kv_len, p.row_probabilities ? 1.0f : 1.0f / t.sums[r], p.pq, pc, p.sk4);
    const int32_t psum = p_terms(pc, p.sk4, chunks);
    t.rowv[r] = static_cast<int32_t>(static_cast<uint32_t>(bt.cv) * static_cast<uint32_t>(psum));
  }
  for (int64_t r = 0; r < kR; ++r) t.pr[r] = w.pc + (r < rows ? r : rows - 1) * p.skq;
  t.hi_count = 0;
  for (int64_t c = 0; c < p.skq / 32; ++c)
    for (uint32_t m = chunks[c]; m != 0; m &= m - 1)
      t.hi[t.hi_count++] = static_cast<uint16_t>(8 * c + __builtin_ctz(m));
}

void output(const Args& p, int64_t b, int64_t h, int64_t i, int64_t rows, Scratch& w, const TileP& t) {
  int64_t d0 = 0;
  for (; d0 + 16 * kMaxN <= p.dvp; d0 += 16 * kMaxN) output_block<kMaxN>(p, w, t, b, h, i, d0, rows);
  switch ((p.dvp - d0) / 16) {
    case 3: output_block<3>(p, w, t, b, h, i, d0, rows); break;
    case 2: output_block<2>(p, w, t, b, h, i, d0, rows); break;
    case 1: output_block<1>(p, w, t, b, h, i, d0, rows); break;
    default: break;
  }
}

}  // namespace

void task_avx512_vnni(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Scratch& w) {
  pack_head_vnni(p, b, h, w);
  for (int64_t i = i0; i < i1; i += kR) {
    const int64_t rows = min_i64(kR, i1 - i);
    TileP t;
    t.hi = w.hi;
    probabilities(p, b, h, i, rows, w, t);
    output(p, b, h, i, rows, w, t);
  }
}

}  // namespace octet::cpu::qattn
