// x / d for every lane of a row of outputs that share one divisor d, without a vector
// division per output (512-bit VDIVPS costs about 16 multiplies on the Xeons octet is
// measured on): one scalar division per row for y = RN(1/d), then per vector
//   q0 = RN(x y),  r' = q0 d - x (exact, one FMA),  q = RN(q0 - r' y) (one FMA),
// which is RN(x / d), the correctly rounded quotient -- the same bits as VDIVPS -- by
// Markstein's theorem (Handbook of Floating-Point Arithmetic, the division correction step
// with an FMA): with y within a relative 2^-24 of 1/d (y = RN(1/d) is, exact when d is a
// power of two), q0 a faithful approximation of x / d (one of its two neighbours), and no
// underflow or overflow, r = x - d q0 is exact and RN(q0 + r y) = RN(x / d). The remainder
// is taken negated (r' = -r exactly) so that x = -0 gives -0 like the division (q0 - r' y
// with r' = +0).
// Scaling x and d by powers of two scales every step exactly while all values stay normal,
// so the cases reduce to mantissas X, D in [1, 2), u = 2^-24, z = X / D, y = RN(1/D):
// - X >= D: |X y - z| <= X u / 2 < ulp(z) / 2, so q0 is faithful -- except X = D, where q0
//   may be 1 - u; then r' = -D u exactly and q = RN(1 + u (D y - 1)) = 1.
// - X < D, q0 faithful: Markstein's theorem.
// - X < D, q0 one step past a neighbour of z (possible when X |y - 1/D| > u / 2): then
//   q0 - r' y = z + (D y - 1)(z - q0) with |D y - 1| < u, |z - q0| < 1.5 u, r' rounded by
//   at most 2 u^2, so within 3.5 u^2 of z, while z lies more than (1 - X / 2) u from the
//   midpoint that matters; X <= 2 - 4 u (X < D) leaves only X = 2 - 4 u and 2 - 6 u, with
//   D above them (mantissas all ones and one below), which the tests run for every X.
// Checked besides: every X for 16k D (1.4e11 quotients, the results file of session 17's
// qattention-division) and the RowDivision tests.
//
// When the steps stay normal: callers check x's scale once per call
// (reciprocal_division_scale_ok: every x is 0 or 2^-60 <= |x| <= 2^59) and RowDivisor
// checks d per row (2^-1 <= d <= 2^24):
// then y in [2^-24, 2], |q0|, |q| in [2^-85, 2^61], and a nonzero r' has |r'| >= 2^-108
// (in the [1, 2) scaling r' is a nonzero multiple of 2^-48), all normal. Any other d (NaN,
// Inf, 0, a tiny or huge sum) or an unbounded x falls back to the division, so the bits
// never change. Include only from units compiled with the AVX-512 flags.
#pragma once

#include <immintrin.h>

namespace octet::cpu {
namespace {

// Whether every x a caller will divide is 0 or within [2^-60, 2^59] in magnitude, given
// that |x| = |scale| * |n| for integers |n| < 2^31 (rounded once): the scales the division
// by reciprocal may take.
inline bool reciprocal_division_scale_ok(float scale) {
  const float a = __builtin_fabsf(scale);
  return a >= 0x1p-60f && a <= 0x1p28f;  // false for NaN
}

class RowDivisor {
 public:
  // exact_scale: reciprocal_division_scale_ok() of the call's x.
  RowDivisor(float d, bool exact_scale)
      : d_(_mm512_set1_ps(d)),
        y_(_mm512_set1_ps(1.0f / d)),
        reciprocal_(exact_scale && d >= 0x1p-1f && d <= 0x1p24f) {}

  // x / d, correctly rounded (bit for bit VDIVPS).
  __m512 divide(__m512 x) const {
    if (!reciprocal_) return _mm512_div_ps(x, d_);
    const __m512 q0 = _mm512_mul_ps(x, y_);
    const __m512 r = _mm512_fmsub_ps(q0, d_, x);  // d q0 - x, exact
    return _mm512_fnmadd_ps(r, y_, q0);
  }

  bool uses_reciprocal() const { return reciprocal_; }

 private:
  __m512 d_, y_;
  bool reciprocal_;
};

}  // namespace
}  // namespace octet::cpu
