// The task body of the optimized octet.QAttention kernel, written once over an integer
// traits type T and compiled once per ISA level (qattention_{generic,avx2,avx512}.cpp).
// Everything is in an anonymous namespace, so each level's copy stays private to its
// translation unit (see simd/vec_impl.h); nothing here includes a standard header.
//
// A task (batch b, head h, up to 64 query rows) first packs its head, unless the thread's
// previous task already did:
//   K^T  quantized, centered int16, channels in pairs: kt[d / 2][j][d % 2]
//   V    quantized, centered int16, keys in pairs:     vp[j / 2][d][j % 2]
// Then per tile of T::kRows query rows:
//   scores  acc[r][j] += madd((q[r][d], q[r][d+1]), (K[j][d], K[j][d+1]))   exact int32
//           s = scale * (qk_scale * float(acc)) + mask, causal -> lowest, softmax (vec table)
//           P quantized per row to centered int16 (padded to a pair with 0)
//   output  acc[r][d] += madd((P[r][j], P[r][j+1]), (V[j][d], V[j+1][d]))   exact int32
//           y = out_scale * float(acc)
// The float products are the reference kernel's, in its order (ref_qattention.cpp), so
// scores and outputs match it bit for bit given the same quantized P.
//
// T provides: P (16-bit pairs) and I (int32 lanes) vector types, kLanes (int32 lanes per
// vector, dividing kCols), kRows (tile height, dividing kBlockRows), the packing steps
// transpose_pairs(src, pairs, rows, dst) (dst[c][r] = src[r][c] over int32 pairs, rows a
// multiple of kCols) and interleave(a, b, n, out) (out[2d] = a[d], out[2d+1] = b[d], n a
// multiple of kCols), zero(), load(int16*)
// and bcast(int16*) (one pair in every lane) giving P, madd_add(acc, P, P), store(float*,
// I, m) (m * float(acc)), store2(float*, I, m1, m2) (m2 * (m1 * float(acc))) and
// quantize(x, n, mul, Quant, int16*), which quantizes x * mul (the product rounded to
// float; mul = 1 leaves x as it is) over a prefix of whole vectors and returns its length
// (the rest goes through quantize_one).
#pragma once

#include "kernels/cpu/qattention.h"

namespace octet::cpu::qattn {
namespace {

inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }

// QuantizeLinear(x) - zero_point, as QuantParam::centered: a float division, round half
// to even (the default rounding mode, which the vector versions name explicitly),
// saturation, NaN to the zero point.
inline int16_t quantize_one(float x, const Quant& q) {
  float r = __builtin_nearbyintf(x / q.scale);
  if (r != r) return 0;
  r = r < q.lo ? q.lo : r > q.hi ? q.hi : r;
  return static_cast<int16_t>(r);
}

// Query row qi's scores of head (b, h) before the softmax: the additive mask added (unless
// the caller fused it into the scores) and the keys past the causal boundary set lowest.
inline void mask_score_row(const Args& p, int64_t b, int64_t h, int64_t qi, bool add_mask, float* row) {
  if (add_mask && p.mask) {
    const float* m = p.mask + b * p.m_b + h * p.m_h + qi * p.m_q;
    if (p.m_k == 1) {
      p.vec->binary[static_cast<int>(BinaryOp::Add)](row, m, row, p.kv_len);
    } else {
      for (int64_t j = 0; j < p.kv_len; ++j) row[j] += m[j * p.m_k];
    }
  }
  if (p.causal)
    for (int64_t j = max_i64(qi + (p.kv_len - p.q_len) + 1, 0); j < p.kv_len; ++j) row[j] = p.lowest;
}

template <class T>
struct Kernel {
  using P = typename T::P;
  using I = typename T::I;
  static constexpr int64_t N = kCols / T::kLanes, R = T::kRows;
  static_assert(kCols % T::kLanes == 0 && kBlockRows % T::kRows == 0 && T::kRows <= kMaxTileRows);

  // n values x * mul quantized into out[0, n), zeros in out[n, padded).
  static void quantize_row(const float* x, int64_t n, float mul, const Quant& q, int16_t* out, int64_t padded) {
    int64_t i = T::quantize(x, n, mul, q, out);
    for (; i < n; ++i) out[i] = quantize_one(x[i] * mul, q);
    for (; i < padded; ++i) out[i] = 0;
  }

  static void pack_head(const Args& p, int64_t b, int64_t h, Scratch& w) {
    if (w.packed == b * p.heads + h) return;
    w.packed = b * p.heads + h;
    // K: quantized rows (keys past Sk are zero: zero scores, never read), then transposed
    // as a [skp][dk2 / 2] matrix of int32 pairs.
    for (int64_t j = 0; j < p.skp; ++j) {
      int16_t* dst = w.kq + j * p.dk2;
      if (j < p.kv_len) quantize_row(p.k + b * p.k_b + j * p.k_s + h * p.head_k, p.head_k, 1.0f, p.kq, dst, p.dk2);
      else for (int64_t d = 0; d < p.dk2; ++d) dst[d] = 0;
    }
    T::transpose_pairs(w.kq, p.dk2 / 2, p.skp, w.kt);
    // V: rows 2jp and 2jp + 1 quantized (an odd Sk's last key pairs with zeros), then
    // interleaved channel by channel.
    for (int64_t jp = 0; jp < p.sk2 / 2; ++jp) {
      for (int64_t e = 0; e < 2; ++e) {
        const int64_t j = 2 * jp + e;
        int16_t* dst = w.row + e * p.dvp;
        if (j < p.kv_len) quantize_row(p.v + b * p.v_b + j * p.v_s + h * p.head_v, p.head_v, 1.0f, p.vq, dst, p.dvp);
        else for (int64_t d = 0; d < p.dvp; ++d) dst[d] = 0;
      }
      T::interleave(w.row, w.row + p.dvp, p.dvp, w.vp + jp * 2 * p.dvp);
    }
  }

  // The register tile both products use: acc[r][n] = sum over `pairs` of
  // madd(a[r]'s pair, kCols columns of b), b's pair rows `b_stride` int16 apart; exact int32.
  // always_inline: the generic build otherwise keeps it a call and runs ~2x slower.
  __attribute__((always_inline)) static void tile(const int16_t* const a[R], const int16_t* b, int64_t pairs,
                                                  int64_t b_stride, I acc[R][N]) {
    for (int64_t r = 0; r < R; ++r)
      for (int64_t n = 0; n < N; ++n) acc[r][n] = T::zero();
    for (int64_t pi = 0; pi < pairs; ++pi, b += b_stride) {
      P bv[N];
#pragma GCC unroll 4
      for (int64_t n = 0; n < N; ++n) bv[n] = T::load(b + 2 * n * T::kLanes);
#pragma GCC unroll 8
      for (int64_t r = 0; r < R; ++r) {
        const P ar = T::bcast(a[r] + 2 * pi);
#pragma GCC unroll 4
        for (int64_t n = 0; n < N; ++n) acc[r][n] = T::madd_add(acc[r][n], ar, bv[n]);
      }
    }
  }

  // Scores, softmax and quantized P of `rows` (<= R) query rows from i, into w.pc.
  static void scores_tile(const Args& p, int64_t b, int64_t h, int64_t i, int64_t rows, Scratch& w, float* sums) {
    for (int64_t r = 0; r < rows; ++r)
      quantize_row(p.q + b * p.q_b + (i + r) * p.q_s + h * p.head_k, p.head_k, 1.0f, p.qq, w.qc + r * p.dk2, p.dk2);
    const int16_t* q[R];
    for (int64_t r = 0; r < R; ++r) q[r] = w.qc + min_i64(r, rows - 1) * p.dk2;  // a short tile repeats its last row
    const int64_t pairs = p.dk2 / 2;
    for (int64_t j0 = 0; j0 < p.skp; j0 += kCols) {
      I acc[R][N];
      tile(q, w.kt + 2 * j0, pairs, 2 * p.skp, acc);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t n = 0; n < N; ++n)
          T::store2(w.s + r * p.skp + j0 + n * T::kLanes, acc[r][n], p.qk_scale, p.scale);
    }
    for (int64_t r = 0; r < rows; ++r) {
      float* row = w.s + r * p.skp;
      mask_score_row(p, b, h, i + r, /*add_mask=*/true, row);
      // The vectorized softmax (softmax_row's steps), its last pass, p = e * (1 / sum),
      // fused with quantizing p.
      const float sum = p.vec->exp_sum(row, 1.0f, p.vec->max(row, p.kv_len), row, p.kv_len);
      sums[r] = sum;  // row_probabilities: e itself is quantized, the output divided by the sum
      quantize_row(row, p.kv_len, p.row_probabilities ? 1.0f : 1.0f / sum, p.pq, w.pc + r * p.sk2, p.sk2);
    }
  }

  // y rows = out_scale * (P rows . V) for `rows` rows from i.
  static void output_tile(const Args& p, int64_t b, int64_t h, int64_t i, int64_t rows, Scratch& w,
                          const float* sums) {
    const int16_t* pr[R];
    for (int64_t r = 0; r < R; ++r) pr[r] = w.pc + min_i64(r, rows - 1) * p.sk2;
    const int64_t pairs = p.sk2 / 2;
    for (int64_t d0 = 0; d0 < p.dvp; d0 += kCols) {
      I acc[R][N];
      tile(pr, w.vp + 2 * d0, pairs, 2 * p.dvp, acc);
      const int64_t width = min_i64(kCols, p.head_v - d0);
      for (int64_t r = 0; r < rows; ++r) {
        float* y = p.y + b * p.y_b + (i + r) * p.y_s + h * p.head_v + d0;
        if (width == kCols) {
          for (int64_t n = 0; n < N; ++n) T::store(y + n * T::kLanes, acc[r][n], p.out_scale);
        } else {
          float tail[kCols];
          for (int64_t n = 0; n < N; ++n) T::store(tail + n * T::kLanes, acc[r][n], p.out_scale);
          for (int64_t d = 0; d < width; ++d) y[d] = tail[d];
        }
        if (p.row_probabilities)
          for (int64_t d = 0; d < width; ++d) y[d] /= sums[r];
      }
    }
  }

  static void task(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Scratch& w) {
    pack_head(p, b, h, w);
    for (int64_t i = i0; i < i1; i += R) {
      const int64_t rows = min_i64(R, i1 - i);
      float sums[R];
      scores_tile(p, b, h, i, rows, w, sums);
      output_tile(p, b, h, i, rows, w, sums);
    }
  }
};

}  // namespace
}  // namespace octet::cpu::qattn
