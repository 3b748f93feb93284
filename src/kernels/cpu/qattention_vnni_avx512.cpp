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
// - P.V stays VPDPWSSD: P has up to 4095 levels (16-bit P), more than a byte holds.
// - Register tiles of 4 query rows x 64 columns (16 accumulators: VPDP* latency is hidden
//   and each loaded K/V vector serves four rows) for both products.
// - With row_probabilities the softmax's exp, sum and P quantization are one pass over the
//   scores (the exp and the summation order are vec_impl.h's row_exp_sum, so P and the sum
//   are the same floats), and the division by the row sum is vectorized.
// qattention.cpp picks this task at the AVX-512 level where CPUID reports AVX512-VNNI
// (and tests have not turned it off, see qattn::set_vnni_allowed).
#pragma GCC target("avx512vnni")

#include "kernels/cpu/qattention_avx512_traits.h"
#include "kernels/cpu/simd/traits_avx512.h"
#include "kernels/cpu/simd/vec_impl.h"

namespace octet::cpu::qattn {
namespace {

using Base = Kernel<Avx512Int>;
using Math = simd::Math<simd::Avx512Traits>;

constexpr int64_t kR = 4;  // query rows per tile (divides kBlockRows)
constexpr int kMaxN = 4;   // 16-lane columns per tile: 64 keys or value channels
static_assert(kBlockRows % kR == 0 && kR <= kMaxTileRows);

__mmask16 lanes(int64_t n) { return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u); }

// acc += the u8 x s8 (dpbusd) or s16 x s16 (dpwssd) pair sums of a and b. In asm because
// GCC 12, given the intrinsics on an array of accumulators, copies each accumulator to a
// fresh register around every instruction (tied operand) and spills: the tiles ran at half
// the instructions' throughput.
inline __m512i dpbusd(__m512i acc, __m512i a, __m512i b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}
inline __m512i dpwssd(__m512i acc, __m512i a, __m512i b) {
  asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}

__m512i bcast4(const void* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// n values of x quantized (q), shifted by -offset and stored as bytes in out[0, padded)
// (zeros past n); returns the sum of the n shifted values. offset makes them fit a byte:
// lo for unsigned, lo + 128 for signed. NaN quantizes to 0 (the zero point) as quantize_one.
template <bool kByInverse>
int32_t quantize_bytes(const float* x, int64_t n, const Quant& q, int32_t offset, int8_t* out, int64_t padded) {
  const Avx512Int::QuantVec qv(q);
  const __m512i off = _mm512_set1_epi32(offset);
  __m512i sum = _mm512_setzero_si512();
  for (int64_t i = 0; i < padded; i += 16) {
    const __mmask16 m = lanes(n - i < 0 ? 0 : n - i);
    __m512 c = Avx512Int::quantize_vec<kByInverse>(_mm512_maskz_loadu_ps(m, x + i), qv);
    c = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(c, c, _CMP_ORD_Q), c);  // NaN -> 0
    const __m512i v = _mm512_maskz_sub_epi32(m, _mm512_cvtps_epi32(c), off);
    sum = _mm512_add_epi32(sum, v);
    _mm_mask_storeu_epi8(out + i, lanes(padded - i), _mm512_cvtepi32_epi8(v));
  }
  return _mm512_reduce_add_epi32(sum);
}

int32_t quantize_bytes(const float* x, int64_t n, const Quant& q, int32_t offset, int8_t* out, int64_t padded) {
  return q.inv != 0.0f ? quantize_bytes<true>(x, n, q, offset, out, padded)
                       : quantize_bytes<false>(x, n, q, offset, out, padded);
}

// The byte-product constants of Args' Q and K quantizations.
struct ByteTerms {
  int32_t q_lo, ck;  // qu = qc - q_lo; ks = kc - ck
  explicit ByteTerms(const Args& p) : q_lo(static_cast<int32_t>(p.qq.lo)), ck(static_cast<int32_t>(p.kq.lo) + 128) {}
};

// K and V of head (b, h) into w: ks bytes transposed into quads (kt8) with each key's
// constant term (kcol), V as the int16 key pairs the other levels use (vp).
void pack_head(const Args& p, int64_t b, int64_t h, Scratch& w) {
  if (w.packed == b * p.heads + h) return;
  w.packed = b * p.heads + h;
  const ByteTerms t(p);
  // Wraps modulo 2^32 like the lanes; the full sum fits int32 (see the file comment).
  const uint32_t constant = static_cast<uint32_t>(p.head_k) * static_cast<uint32_t>(t.q_lo) * static_cast<uint32_t>(t.ck);
  for (int64_t j = 0; j < p.skp; ++j) {
    int8_t* dst = w.k8 + j * p.dk4;
    int32_t sum = 0;
    if (j < p.kv_len) {
      sum = quantize_bytes(p.k + b * p.k_b + j * p.k_s + h * p.head_k, p.head_k, p.kq, t.ck, dst, p.dk4);
    } else {
      for (int64_t d = 0; d < p.dk4; ++d) dst[d] = 0;
    }
    w.kcol[j] = static_cast<int32_t>(static_cast<uint32_t>(t.q_lo) * static_cast<uint32_t>(sum) + constant);
  }
  // [skp][dk4 / 4] quads -> [dk4 / 4][skp] quads: the int32 transpose of the pair layout.
  Avx512Int::transpose_pairs(reinterpret_cast<const int16_t*>(w.k8), p.dk4 / 4, p.skp, reinterpret_cast<int16_t*>(w.kt8));
  for (int64_t jp = 0; jp < p.sk2 / 2; ++jp) {
    for (int64_t e = 0; e < 2; ++e) {
      const int64_t j = 2 * jp + e;
      int16_t* dst = w.row + e * p.dvp;
      if (j < p.kv_len) Base::quantize_row(p.v + b * p.v_b + j * p.v_s + h * p.head_v, p.head_v, 1.0f, p.vq, dst, p.dvp);
      else for (int64_t d = 0; d < p.dvp; ++d) dst[d] = 0;
    }
    Avx512Int::interleave(w.row, w.row + p.dvp, p.dvp, w.vp + jp * 2 * p.dvp);
  }
}

// Scores of the tile's rows (q[r], byte rows with constant terms rowc[r]) against keys
// [j0, j0 + 16 N): s[r][j] = scale * (qk_scale * float(exact sum)), for r < rows.
template <int N>
void scores_block(const Args& p, const Scratch& w, const uint8_t* const q[kR], const int32_t rowc[kR], int64_t j0,
                  int64_t rows) {
  __m512i acc[kR][N];
#pragma GCC unroll 16
  for (int n = 0; n < N; ++n) {
    const __m512i c = _mm512_loadu_si512(w.kcol + j0 + 16 * n);
#pragma GCC unroll 16
    for (int64_t r = 0; r < kR; ++r) acc[r][n] = _mm512_add_epi32(c, _mm512_set1_epi32(rowc[r]));
  }
  const int8_t* k = w.kt8 + 4 * j0;
  for (int64_t g = 0; g < p.dk4 / 4; ++g, k += 4 * p.skp) {
    __m512i kv[N];
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) kv[n] = _mm512_loadu_si512(k + 64 * n);
#pragma GCC unroll 16
    for (int64_t r = 0; r < kR; ++r) {
      const __m512i qv = bcast4(q[r] + 4 * g);
#pragma GCC unroll 16
      for (int n = 0; n < N; ++n) acc[r][n] = dpbusd(acc[r][n], qv, kv[n]);
    }
  }
  const __m512 m1 = _mm512_set1_ps(p.qk_scale), m2 = _mm512_set1_ps(p.scale);
#pragma GCC unroll 16
  for (int64_t r = 0; r < rows; ++r)
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n)
      _mm512_storeu_ps(w.s + r * p.skp + j0 + 16 * n, _mm512_mul_ps(m2, _mm512_mul_ps(m1, _mm512_cvtepi32_ps(acc[r][n]))));
}

// y rows i.. = out_scale * float(P rows . V) for value channels [d0, d0 + 16 N) (divided
// by the row sums with row_probabilities), for r < rows.
template <int N>
void output_block(const Args& p, const Scratch& w, const int16_t* const pr[kR], int64_t b, int64_t h, int64_t i,
                  int64_t d0, int64_t rows, const float sums[kR]) {
  __m512i acc[kR][N];
#pragma GCC unroll 16
  for (int64_t r = 0; r < kR; ++r)
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) acc[r][n] = _mm512_setzero_si512();
  const int16_t* v = w.vp + 2 * d0;
  for (int64_t jp = 0; jp < p.sk2 / 2; ++jp, v += 2 * p.dvp) {
    __m512i vv[N];
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) vv[n] = _mm512_loadu_si512(v + 32 * n);
#pragma GCC unroll 16
    for (int64_t r = 0; r < kR; ++r) {
      const __m512i pv = bcast4(pr[r] + 2 * jp);
#pragma GCC unroll 16
      for (int n = 0; n < N; ++n) acc[r][n] = dpwssd(acc[r][n], pv, vv[n]);
    }
  }
  const __m512 m = _mm512_set1_ps(p.out_scale);
#pragma GCC unroll 16
  for (int64_t r = 0; r < rows; ++r) {
    float* y = p.y + b * p.y_b + (i + r) * p.y_s + h * p.head_v + d0;
    const __m512 sum = _mm512_set1_ps(sums[r]);
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) {
      __m512 out = _mm512_mul_ps(m, _mm512_cvtepi32_ps(acc[r][n]));
      if (p.row_probabilities) out = _mm512_div_ps(out, sum);
      const int64_t width = p.head_v - d0 - 16 * n;
      if (width >= 16) _mm512_storeu_ps(y + 16 * n, out);
      else _mm512_mask_storeu_ps(y + 16 * n, lanes(width), out);
    }
  }
}

// row_probabilities: P = quantized exp(x - max) straight from the scores, zeros up to
// `padded`; returns the row's sum. Element for element vec_impl.h's row_exp_sum (same exp,
// same four partial sums in the same order) followed by Base::quantize_row with mul 1.
template <bool kByInverse>
float exp_quantize_row(const float* x, int64_t n, float max, const Quant& q, int16_t* out, int64_t padded) {
  using T = simd::Avx512Traits;
  const __m512 vs = _mm512_set1_ps(1.0f), vshift = _mm512_set1_ps(-max);
  const Avx512Int::QuantVec qv(q);
  auto put = [&](int64_t i, __m512 e, __mmask16 m) {
    const __m512 c = Avx512Int::quantize_vec<kByInverse>(e, qv);
    _mm256_mask_storeu_epi16(out + i, m, _mm512_cvtepi32_epi16(_mm512_cvtps_epi32(c)));
  };
  auto e_at = [&](int64_t i) {
    const __m512 e = Math::exp_flush(_mm512_fmadd_ps(_mm512_loadu_ps(x + i), vs, vshift));
    put(i, e, 0xFFFF);
    return e;
  };
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    s0 = _mm512_add_ps(s0, e_at(i));
    s1 = _mm512_add_ps(s1, e_at(i + 16));
    s2 = _mm512_add_ps(s2, e_at(i + 32));
    s3 = _mm512_add_ps(s3, e_at(i + 48));
  }
  for (; i + 16 <= n; i += 16) s0 = _mm512_add_ps(s0, e_at(i));
  if (i < n) {
    const __m512 e = Math::exp_flush(_mm512_fmadd_ps(T::load_tail(x + i, n - i, -__builtin_inff()), vs, vshift));
    put(i, e, lanes(n - i));
    s1 = _mm512_add_ps(s1, e);
  }
  for (int64_t k = n; k < padded; ++k) out[k] = 0;
  return T::reduce_add(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

// Scores, softmax and quantized P (w.pc) of `rows` query rows from i; the row sums to sums.
void probabilities(const Args& p, int64_t b, int64_t h, int64_t i, int64_t rows, Scratch& w, float sums[kR]) {
  const ByteTerms t(p);
  const uint8_t* q[kR];
  int32_t rowc[kR];
  for (int64_t r = 0; r < rows; ++r) {
    int8_t* dst = reinterpret_cast<int8_t*>(w.q8 + r * p.dk4);
    const int32_t sum = quantize_bytes(p.q + b * p.q_b + (i + r) * p.q_s + h * p.head_k, p.head_k, p.qq, t.q_lo, dst, p.dk4);
    rowc[r] = static_cast<int32_t>(static_cast<uint32_t>(t.ck) * static_cast<uint32_t>(sum));
  }
  for (int64_t r = 0; r < kR; ++r) {  // a short tile repeats its last row
    q[r] = w.q8 + (r < rows ? r : rows - 1) * p.dk4;
    rowc[r] = rowc[r < rows ? r : rows - 1];
  }
  int64_t j0 = 0;
  for (; j0 + 16 * kMaxN <= p.skp; j0 += 16 * kMaxN) scores_block<kMaxN>(p, w, q, rowc, j0, rows);
  switch ((p.skp - j0) / 16) {
    case 3: scores_block<3>(p, w, q, rowc, j0, rows); break;
    case 2: scores_block<2>(p, w, q, rowc, j0, rows); break;
    case 1: scores_block<1>(p, w, q, rowc, j0, rows); break;
    default: break;
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* row = w.s + r * p.skp;
    const int64_t qi = i + r;
    if (p.mask) {
      const float* m = p.mask + b * p.m_b + h * p.m_h + qi * p.m_q;
      if (p.m_k == 1) {
        p.vec->binary[static_cast<int>(BinaryOp::Add)](row, m, row, p.kv_len);
      } else {
        for (int64_t j = 0; j < p.kv_len; ++j) row[j] += m[j * p.m_k];
      }
    }
    if (p.causal)
      for (int64_t j = max_i64(qi + (p.kv_len - p.q_len) + 1, 0); j < p.kv_len; ++j) row[j] = p.lowest;
    const float max = p.vec->max(row, p.kv_len);
    int16_t* pc = w.pc + r * p.sk2;
    if (p.row_probabilities) {
      sums[r] = p.pq.inv != 0.0f ? exp_quantize_row<true>(row, p.kv_len, max, p.pq, pc, p.sk2)
                                 : exp_quantize_row<false>(row, p.kv_len, max, p.pq, pc, p.sk2);
    } else {
      sums[r] = p.vec->exp_sum(row, 1.0f, max, row, p.kv_len);
      Base::quantize_row(row, p.kv_len, 1.0f / sums[r], p.pq, pc, p.sk2);
    }
  }
}

void output(const Args& p, int64_t b, int64_t h, int64_t i, int64_t rows, Scratch& w, const float sums[kR]) {
  const int16_t* pr[kR];
  for (int64_t r = 0; r < kR; ++r) pr[r] = w.pc + (r < rows ? r : rows - 1) * p.sk2;
  int64_t d0 = 0;
  for (; d0 + 16 * kMaxN <= p.dvp; d0 += 16 * kMaxN) output_block<kMaxN>(p, w, pr, b, h, i, d0, rows, sums);
  switch ((p.dvp - d0) / 16) {
    case 3: output_block<3>(p, w, pr, b, h, i, d0, rows, sums); break;
    case 2: output_block<2>(p, w, pr, b, h, i, d0, rows, sums); break;
    case 1: output_block<1>(p, w, pr, b, h, i, d0, rows, sums); break;
    default: break;
  }
}

}  // namespace

void task_avx512_vnni(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Scratch& w) {
  pack_head(p, b, h, w);
  for (int64_t i = i0; i < i1; i += kR) {
    const int64_t rows = min_i64(kR, i1 - i);
    float sums[kR];
    probabilities(p, b, h, i, rows, w, sums);
    output(p, b, h, i, rows, w, sums);
  }
}

}  // namespace octet::cpu::qattn
