// The first half of the AVX512-VNNI task of octet.QAttention (qattention_vnni_avx512.cpp
// describes the byte forms and the float steps), shared by its two P.V products: a tile of
// kR query rows' scores (VPDPBUSD blocks), their softmax and their quantized P rows, with
// each row's sum of P and the groups of four keys that hold a P >= 256. The VNNI P.V
// (qattention_vnni_avx512.cpp) reads P as int16 rows; the AMX one
// (qattention_amx_vnni_avx512.cpp) as two byte matrices, P's low and high bytes, which
// PRowWriter writes instead (the same integers). Include only from units compiled with the
// AVX-512 and VNNI flags; everything stays in an anonymous namespace (see
// qattention_impl.h).
#pragma once

#include "kernels/cpu/qattention_bytes_avx512.h"
#include "kernels/cpu/row_division_avx512.h"
#include "kernels/cpu/simd/traits_avx512.h"
#include "kernels/cpu/simd/vec_impl.h"

namespace octet::cpu::qattn {
namespace {

using F = simd::Avx512Traits;

constexpr int64_t kR = 4;  // query rows per tile (divides kBlockRows)
constexpr int kMaxN = 4;   // 16-lane columns per tile: 64 keys or value channels
static_assert(kBlockRows % kR == 0 && kR <= kMaxTileRows);

// One group of four byte pairs for a tile: acc[r][n] += VPDPBUSD(row_vector(r), b's
// 64-byte column block n) for the tile's kR rows and N column blocks. The scores (Q
// broadcast against K) and the VNNI P.V (P's bytes against V) differ only in the row
// vector and in what b points at.
template <int N, class RowVector>
__attribute__((always_inline)) inline void dpbusd_tile(__m512i (&acc)[kR][N], const int8_t* b, RowVector row_vector) {
  __m512i bv[N];
#pragma GCC unroll 16
  for (int n = 0; n < N; ++n) bv[n] = _mm512_loadu_si512(b + 64 * n);
#pragma GCC unroll 16
  for (int64_t r = 0; r < kR; ++r) {
    const __m512i a = row_vector(r);
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) acc[r][n] = dpbusd(acc[r][n], a, bv[n]);
  }
}

// An output vector from its exact int32 P.V sum (the row's constant term included):
// out_scale * float(sum), divided by the row's P sum with row_probabilities. The float
// steps both P.V products end in, so the AMX task's outputs are the VNNI task's bit for bit.
inline __m512 output_value(const Args& p, __m512 out_scale, const RowDivisor& row_sum, __m512i sum) {
  const __m512 out = _mm512_mul_ps(out_scale, _mm512_cvtepi32_ps(sum));
  return p.row_probabilities ? row_sum.divide(out) : out;
}


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
    dpbusd_tile<N>(acc[set], w.kt8 + 4 * (g * p.skp + j0), [&](int64_t r) { return bcast4(q[r] + 4 * g); });
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
// the groups of four keys where some row has P >= 256 (the VNNI P.V's; the AMX one reads
// only rowv and sums).
struct TileP {
  const int16_t* pr[kR];
  int32_t rowv[kR];  // cv * sum of the row's P
  float sums[kR];    // the softmax sums (row_probabilities divides by them)
  int64_t hi_count;
  uint16_t* hi;  // hi_count group indices
};

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

// Writes a P row 16 keys at a time: the values quantized into pc with Avx512Int's
// quantize_vec (which rounds as quantize_one does, so tail lanes need no scalar loop),
// while summing P and ORing into hi[c] the groups of four keys among keys [32 c, 32 c + 32)
// that hold a P >= 256 (bit g % 8) -- the terms output_block needs, taken while each
// vector is still in registers.
// Where a P row goes: int16 values (pc), or with kBytes their low and high bytes (pl, ph).
struct PRow {
  int16_t* pc;
  uint8_t* pl;
  uint8_t* ph;
};

template <bool kByInverse, bool kBytes>
struct PRowWriter {
  // kBytes' VPERMB indices: to byte k < 16 byte 4 k, to byte 16 + k byte 4 k + 1.
  const __m512i kSplitBytes = _mm512_setr_epi32(0x0C080400, 0x1C181410, 0x2C282420, 0x3C383430, 0x0D090501,
                                                0x1D191511, 0x2D292521, 0x3D393531, 0, 0, 0, 0, 0, 0, 0, 0);
  Avx512Int::QuantVec qv;
  PRow out;
  uint8_t* hi;
  __m256i sum = _mm256_setzero_si256();
  __m512i sum32 = _mm512_setzero_si512();  // put_level's sums, lane-wise in int32
  uint64_t bits = 0;
  PRowWriter(const Quant& q, PRow out_, uint8_t* hi_) : qv(q), out(out_), hi(hi_) {}

  void put(int64_t i, __m512 x) { put_rounded(i, Avx512Int::quantize_vec<kByInverse>(x, qv)); }
  // c: saturated levels (integers, or NaN), or values the conversion rounds to them.
  void put_rounded(int64_t i, __m512 c) {
    // A NaN (a row of -inf scores) converts to 0x80000000, whose low 16 bits are P = 0, as
    // quantize_one gives; sum and hi read the int16, so it adds nothing there either.
    const __m512i v32 = _mm512_cvtps_epi32(c);
    const __m256i v = _mm512_cvtepi32_epi16(v32);  // truncating, as the bytes below
    if constexpr (kBytes) {
      // One VPERMB (AVX512-VBMI, which the AMX unit targets) gathers each lane's low byte
      // into bytes 0-15 and its second byte into 16-31; two VPMOVDBs and a shift (5 ops
      // on the shuffle port) made the P writer 20% slower than the int16 store.
      const __m256i split = _mm512_castsi512_si256(_mm512_permutexvar_epi8(kSplitBytes, v32));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out.pl + i), _mm256_castsi256_si128(split));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out.ph + i), _mm256_extracti128_si256(split, 1));
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.pc + i), v);
    }
    sum = _mm256_add_epi32(sum, _mm256_madd_epi16(v, _mm256_set1_epi16(1)));
    const __mmask8 high = _mm256_test_epi64_mask(v, _mm256_set1_epi16(static_cast<int16_t>(0xFF00)));
    // The groups' bits collect in a register, 64 groups (256 keys) at a time: ORing into
    // hi in memory at every vector chained each row's vectors through store forwarding.
    bits |= static_cast<uint64_t>(high) << ((i & 255) / 4);
    if ((i & 255) == 240) flush(i);
  }
  // put_rounded for c that holds no negative level (exp2_p_row's P; a NaN only in rows
  // whose outputs are NaN): the int32 lanes are P itself, so P's sum adds them as they are (no VPMOVDW + VPMADDWD for
  // the sum: the P writer's shuffle port was the bound), and with kBytes the P >= 256
  // groups come from the high bytes VPERMB already gathered, four keys to a dword.
  void put_level(int64_t i, __m512 c) {
    const __m512i v32 = _mm512_cvtps_epi32(c);
    sum32 = _mm512_add_epi32(sum32, v32);
    __mmask8 high;
    if constexpr (kBytes) {
      const __m256i split = _mm512_castsi512_si256(_mm512_permutexvar_epi8(kSplitBytes, v32));
      const __m128i high_bytes = _mm256_extracti128_si256(split, 1);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out.pl + i), _mm256_castsi256_si128(split));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out.ph + i), high_bytes);
      high = _mm_test_epi32_mask(high_bytes, high_bytes);
    } else {
      const __m256i v = _mm512_cvtepi32_epi16(v32);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.pc + i), v);
      high = _mm256_test_epi64_mask(v, _mm256_set1_epi16(static_cast<int16_t>(0xFF00)));
    }
    bits |= static_cast<uint64_t>(high) << ((i & 255) / 4);
    if ((i & 255) == 240) flush(i);
  }
  // ORs the bits of the 256 keys that hold key i into hi (only groups with a P >= 256,
  // so never past the row's chunks).
  void flush(int64_t i) {
    for (int64_t c = (i & ~int64_t{255}) / 32; bits != 0; bits >>= 8, ++c) hi[c] |= static_cast<uint8_t>(bits);
  }
  int32_t total(int64_t last) {
    flush(last);
    const __m256i s8 = _mm256_add_epi32(
        sum, _mm256_add_epi32(_mm512_castsi512_si256(sum32), _mm512_extracti64x4_epi64(sum32, 1)));
    const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
    const __m128i s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
    return _mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 1)));
  }
};

// P = e[0, n) * mul quantized into pc, zeros from n to sk4 rounded up to 16 (pc holds skq,
// a multiple of 64); returns sum P and marks hi (PRowWriter).
template <bool kByInverse, bool kBytes>
int32_t quantize_p_row(const float* e, int64_t n, float mul, const Quant& q, PRow pc, int64_t sk4, uint8_t* hi) {
  const __m512 vmul = _mm512_set1_ps(mul);
  PRowWriter<kByInverse, kBytes> out(q, pc, hi);
  for (int64_t i = 0; i < sk4; i += 16)  // zeros past n quantize to P = 0
    out.put(i, _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes(n - i), e + i), vmul));
  return out.total(sk4 - 1);
}

// row_probabilities' P row in one pass, from exp2: P = e / p_scale = 2^(log2e (x - max))
// / p_scale, the division folded into the polynomial's coefficients, rounded by the
// conversion (the default rounding, to nearest even) and saturated; never stored as
// floats. 2^f for f in [-1/2, 1/2] is a degree-5 fit (relative error 2.4e-7); with the
// roundings of log2e (x - max) (|x - max| * 6e-8 in the exponent, ~6e-7 relative where P
// can be nonzero) the product is within ~1e-6 relative of exp(x - max) / p_scale: P
// differs from the exact level only where that lies within ~0.004 of a half-integer
// (P <= 4095), by one level. *sum = the softmax sum (of the same e); returns sum P.
template <bool kBytes>
int32_t exp2_p_row(const float* x, float max, int64_t n, const Quant& q, PRow pc, uint8_t* hi, float* sum) {
  const float inv = q.inv != 0.0f ? q.inv : 1.0f / q.scale;
  const __m512 log2e = F::set1(1.44269504088896341f), vmax = F::set1(max);
  const __m512 floor = F::set1(-120.0f);  // 2^-120 / p_scale rounds to P = 0 and adds nothing to the sum
  const __m512 c0 = F::set1(1.0000001192092896f * inv), c1 = F::set1(0.6931469440460205f * inv),
               c2 = F::set1(0.24022120237350464f * inv), c3 = F::set1(0.05550713092088699f * inv),
               c4 = F::set1(0.009675540961325169f * inv), c5 = F::set1(0.001327647129073739f * inv);
  const __m512 hiq = F::set1(q.hi);
  PRowWriter<true, kBytes> out(q, pc, hi);
  auto y_at = [&](__m512 xv, __mmask16 real) {
    // max returns its second operand for a NaN (a row of -inf scores): P = 0, sum NaN.
    // x - max first, as exp_sum: exact near the maximum, and finite for a row of lowest
    // scores (a causal row that sees no key), where max * log2e would overflow.
    const __m512 t = _mm512_max_ps(floor, _mm512_mul_ps(_mm512_sub_ps(xv, vmax), log2e));
    const __m512 nf = F::round(t);
    const __m512 f = _mm512_sub_ps(t, nf);
    __m512 p = _mm512_fmadd_ps(c5, f, c4);
    p = _mm512_fmadd_ps(p, f, c3);
    p = _mm512_fmadd_ps(p, f, c2);
    p = _mm512_fmadd_ps(p, f, c1);
    p = _mm512_fmadd_ps(p, f, c0);
    return _mm512_maskz_scalef_ps(real, p, nf);  // e / p_scale, 0 past n
  };
  // y >= 0 and lo <= 0 for every P type, so only hi clamps. A NaN y (a row of -inf
  // scores, or a NaN score) converts to 0x80000000, P bytes 0 as before; its lanes spoil
  // P's int32 sum, but then the row's float sum is NaN too, and so is every output of the
  // row whatever the sum of P.
  auto put = [&](int64_t i, __m512 y) {
    out.put_level(i, _mm512_min_ps(hiq, y));
    return y;
  };
  __m512 s0 = F::set1(0.0f), s1 = s0, s2 = s0, s3 = s0;
  const __mmask16 all = 0xFFFF;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    s0 = F::add(s0, put(i, y_at(F::load(x + i), all)));
    s1 = F::add(s1, put(i + 16, y_at(F::load(x + i + 16), all)));
    s2 = F::add(s2, put(i + 32, y_at(F::load(x + i + 32), all)));
    s3 = F::add(s3, put(i + 48, y_at(F::load(x + i + 48), all)));
  }
  for (; i + 16 <= n; i += 16) s0 = F::add(s0, put(i, y_at(F::load(x + i), all)));
  if (i < n) {
    const __mmask16 real = lanes(n - i);
    s1 = F::add(s1, put(i, y_at(_mm512_maskz_loadu_ps(real, x + i), real)));
  }
  *sum = F::reduce_add(F::add(F::add(s0, s1), F::add(s2, s3))) * q.scale;
  return out.total(n - 1);
}

// Scores, softmax and quantized P of `rows` (<= kR) query rows from i: row r's P at
// out.pc (or out.pl and out.ph with kBytes) + r * p.skq, its sum in t.sums[r] and its
// constant term in t.rowv[r]; the groups with a P >= 256 ORed into w.chunks (per 32 keys,
// bit g % 8 for group g; the caller zeroes them).
template <bool kBytes>
void probabilities(const Args& p, int64_t b, int64_t h, int64_t i, int64_t rows, Scratch& w, PRow out, TileP& t) {
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
  uint8_t* chunks = w.chunks;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = w.s + r * p.skp;
    mask_score_row(p, b, h, i + r, /*add_mask=*/!tq.fuse, row);
    const float max = tq.fuse ? _mm512_reduce_max_ps(tq.vmax[r]) : p.vec->max(row, p.kv_len);
    const int64_t at = r * p.skq;
    const PRow pc = kBytes ? PRow{nullptr, out.pl + at, out.ph + at} : PRow{out.pc + at, nullptr, nullptr};
    // row_probabilities: P = e itself (exp2_p_row), the output is divided by the sum;
    // otherwise the vectorized softmax's steps, then P = e * (1 / sum) quantized.
    int32_t psum;
    if (p.row_probabilities) {
      psum = exp2_p_row<kBytes>(row, max, p.kv_len, p.pq, pc, chunks, &t.sums[r]);
    } else {
      t.sums[r] = exp_sum(row, max, row, p.kv_len);
      const float mul = 1.0f / t.sums[r];
      psum = p.pq.inv != 0.0f ? quantize_p_row<true, kBytes>(row, p.kv_len, mul, p.pq, pc, p.sk4, chunks)
                              : quantize_p_row<false, kBytes>(row, p.kv_len, mul, p.pq, pc, p.sk4, chunks);
    }
    t.rowv[r] = static_cast<int32_t>(static_cast<uint32_t>(bt.cv) * static_cast<uint32_t>(psum));
  }
}

}  // namespace
}  // namespace octet::cpu::qattn
