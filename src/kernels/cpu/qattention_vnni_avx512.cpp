// The AVX512-VNNI task of octet.QAttention: the same results as the other levels' task
// (qattention_impl.h; same integers, same float products, same softmax), faster -- except
// that with row_probabilities (the form octet quantize writes) P comes from its own exp2
// (exp2_p_row: about 1e-6 relative from exp(s - max) / p_scale), so a P within ~0.004 of a
// .5 boundary may round one level the other way than on the other levels, as the
// reference's double softmax may (tests: VnniTaskMatchesPlainAvx512 bounds such flips;
// bit for bit still without row_probabilities).
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
//   the scores); the division of the outputs by the row sums is vectorized, by the row's
//   reciprocal and a correcting FMA (row_division_avx512.h, the same bits). P's sum and
//   its P >= 256 groups are taken while quantizing (PRowWriter). Without row_probabilities
//   the softmax's exp and P's quantization stay two passes as on the other levels
//   (exp_sum, the vec table's with a leaner exp, then the AVX-512 quantize to int16; the
//   quantization needs the sum). With them, one pass of exp2 and a plain rounding
//   conversion: ~20 vector ops per 16 keys instead of ~32, 7-9% of probabilities()'
//   cycles at 128 keys (a one-pass loop with the exact exp and quantize_vec was slower
//   than two passes: the ops, not the passes, bound it).
// qattention.cpp picks this task at the AVX-512 level where CPUID reports AVX512-VNNI
// (and tests have not turned it off, see qattn::set_vnni_allowed).
#pragma GCC target("avx512vnni")

#include "kernels/cpu/qattention_probabilities_avx512.h"

namespace octet::cpu::qattn {
namespace {

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
    dpbusd_tile<N>(acc, w.vt8 + 4 * (g * p.dvp + d0), [&](int64_t r) {
      int64_t quad;
      __builtin_memcpy(&quad, t.pr[r] + 4 * g, 8);
      return _mm512_shuffle_epi8(_mm512_set1_epi64(quad), pick);
    });
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
  const bool exact_scale = reciprocal_division_scale_ok(p.out_scale);
#pragma GCC unroll 16
  for (int64_t r = 0; r < rows; ++r) {
    float* y = p.y + b * p.y_b + (i + r) * p.y_s + h * p.head_v + d0;
    const RowDivisor sum(t.sums[r], exact_scale);
    const __m512i rowv = _mm512_set1_epi32(t.rowv[r]);
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) {
      const __m512 out = output_value(p, m, sum, _mm512_add_epi32(acc[r][n], rowv));
      const int64_t width = p.head_v - d0 - 16 * n;
      if (width >= 16) _mm512_storeu_ps(y + 16 * n, out);
      else _mm512_mask_storeu_ps(y + 16 * n, lanes(width), out);
    }
  }
}


// The tile's P rows for output_block (a short tile repeats its last row) and the list of
// groups with a P >= 256 from w.chunks.
void list_high_groups(const Args& p, int64_t rows, const Scratch& w, TileP& t) {
  for (int64_t r = 0; r < kR; ++r) t.pr[r] = w.pc + (r < rows ? r : rows - 1) * p.skq;
  // The list of groups with a P >= 256, 16 groups (two chunks: skq / 32 is even) per
  // compress; a bit-by-bit loop cost ~5% of probabilities() in mispredicted exits. Each
  // store writes 16 entries, hi holds skq / 4 >= the list so far + 16.
  t.hi_count = 0;
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (int64_t c = 0; c < p.skq / 32; c += 2) {
    const __mmask16 m = static_cast<__mmask16>(w.chunks[c] | w.chunks[c + 1] << 8);
    const __m512i groups = _mm512_maskz_compress_epi32(m, _mm512_add_epi32(iota, _mm512_set1_epi32(static_cast<int>(8 * c))));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(t.hi + t.hi_count), _mm512_cvtepi32_epi16(groups));
    t.hi_count += __builtin_popcount(m);
  }
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
    for (int64_t c = 0; c < p.skq / 32; ++c) w.chunks[c] = 0;
    probabilities<false>(p, b, h, i, rows, w, PRow{w.pc, nullptr, nullptr}, t);
    list_high_groups(p, rows, w, t);
    output(p, b, h, i, rows, w, t);
  }
}

}  // namespace octet::cpu::qattn
