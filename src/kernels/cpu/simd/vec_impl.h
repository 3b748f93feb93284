// The float32 row kernels, written once over a traits type T (traits_scalar.h,
// traits_avx2.h, traits_avx512.h) and compiled once per ISA level in vec_ops_<isa>.cpp.
// Everything is in an anonymous namespace: each ISA's copy stays private to its
// translation unit, so the linker can never pick an AVX-512 copy for generic callers.
//
// Accuracy (float32, measured against double-precision libm in tests/unit/cpu_vec_test.cpp):
//   exp     Cephes polynomial on r in [-ln2/2, ln2/2], ~2 ulp; subnormal results kept,
//           +inf above 88.7228, 0 below -104, NaN propagates.
//   tanh    odd polynomial for |x| < 0.625 (no cancellation near 0), 1 - 2/(e^2|x|+1) above.
//   erf     rational minimax for |x| < 2 (as Eigen/XLA), 1 - erfc(|x|) beyond.
//   erfc    Numerical Recipes' erfcc with an exact split of z^2, ~5e-7 relative.
//   GeLU    h + h*erf(x/sqrt2), or h*erfc(-x/sqrt2) below x = -0.707 (no cancellation);
//           a faster one for octet.QMatMul (a piecewise polynomial, |error| <= 2.1e-7 |x|).
//   sigmoid 1/(1+e^-x); GeLU-tanh as x*sigmoid(2u), which avoids the 1+tanh cancellation.
#pragma once

#include <cstdint>

#include "kernels/cpu/simd/gelu_table.h"
#include "kernels/cpu/simd/vec_table.h"

namespace octet::cpu::simd {
namespace {

template <class T>
struct Math {
  using F = typename T::F;

  static F exp(F x) { return exp_impl<false>(x, x); }

  // exp(a + b) for a exact and |b| small (a few units): the reduction subtracts n*ln2
  // from `a` alone, so a large `a` loses none of b's bits to rounding a + b.
  static F exp2(F a, F b) { return exp_impl<true>(a, b); }

  // exp(r) for the reduced argument |r| <= ln2/2 (a little more with exp2's b): Cephes'
  // polynomial, 1 + r + r^2 * P(r).
  static F exp_reduced(F r) {
    F p = T::set1(1.9875691500e-4f);
    p = T::fmadd(p, r, T::set1(1.3981999507e-3f));
    p = T::fmadd(p, r, T::set1(8.3334519073e-3f));
    p = T::fmadd(p, r, T::set1(4.1665795894e-2f));
    p = T::fmadd(p, r, T::set1(1.6666665459e-1f));
    p = T::fmadd(p, r, T::set1(5.0000001201e-1f));
    return T::fmadd(T::mul(p, r), r, T::add(r, T::set1(1.0f)));
  }

  template <bool kSplit>
  static F exp_impl(F a, F b) {
    const F hi = T::set1(88.7228f), lo = T::set1(-104.0f);
    const F x = kSplit ? T::add(a, b) : a;
    // Clamp, keeping NaN (max/min return their second operand when either is NaN).
    const F c = T::min(hi, T::max(lo, x));
    const auto n = T::round_to_int(T::mul(c, T::set1(1.44269504088896341f)));
    const F nf = T::int_to_float(n);
    // r = c - n*ln2 in two steps; 0.693359375 has 9 bits, so n times it is exact.
    F r = T::fmadd(nf, T::set1(-0.693359375f), kSplit ? T::min(hi, T::max(lo, a)) : c);
    r = T::fmadd(nf, T::set1(2.12194440e-4f), r);
    if constexpr (kSplit) r = T::add(r, b);
    const F y = T::ldexp(exp_reduced(r), n);
    return T::select(T::gt(x, hi), T::set1(__builtin_inff()), y);
  }

  // exp(x), with 0 wherever the true result is below exp(-87) ~ 1.6e-38 (just above
  // FLT_MIN) instead of a subnormal, and saturating at exp(88) ~ 1.65e38 above 88 instead
  // of reaching +inf: softmax's exp, whose argument x*scale - max is <= 0. A masked or
  // far-below-max score, and every lane past a row's end, lands below -87, and one that
  // writes a subnormal takes a microcode assist (~100 cycles on Intel cores without FTZ):
  // a 197-long row, whose 11 tail lanes used to end subnormal, ran 1.8x slower than a
  // 208-long one. Against the row's sum (>= 1) such a term is below any float32 rounding.
  // Being always in the normal range also saves exp's int round trip and its two-factor
  // ldexp (softmax is exp-bound): 17 vector ops under AVX-512 where exp takes 24.
  // The plain exp above (the Exp op) keeps subnormals and infinities. NaN propagates.
  static F exp_flush(F x) {
    const F floor = T::set1(-87.0f);
    // max/min return their second operand on NaN, so a NaN x stays NaN through the clamp.
    const F c = T::min(T::set1(88.0f), T::max(floor, x));
    const F nf = T::round(T::mul(c, T::set1(1.44269504088896341f)));
    F r = T::fmadd(nf, T::set1(-0.693359375f), c);
    r = T::fmadd(nf, T::set1(2.12194440e-4f), r);
    const F p = exp_reduced(r);
    // exp(-87) = 2^-126 * 1.40 and exp(88) = 2^127 * 1.03: nf is in [-126, 127], so 2^nf
    // and p * 2^nf are normal, which scale_pow2 needs.
    return T::select(T::lt(x, floor), T::set1(0.0f), T::scale_pow2(p, nf));
  }

  // erfc(z) for z >= 0 (Numerical Recipes' erfcc: relative error < 1.2e-7 in exact
  // arithmetic, ~5e-7 in float): t * exp(-z^2 + P(t)), t = 1/(1 + z/2), with z^2 split
  // into hi + lo exactly so large z loses no bits in the exponent.
  static F erfc_pos(F z) {
    const F one = T::set1(1.0f);
    const F t = T::div(one, T::fmadd(z, T::set1(0.5f), one));
    F p = T::set1(0.17087277f);
    p = T::fmadd(p, t, T::set1(-0.82215223f));
    p = T::fmadd(p, t, T::set1(1.48851587f));
    p = T::fmadd(p, t, T::set1(-1.13520398f));
    p = T::fmadd(p, t, T::set1(0.27886807f));
    p = T::fmadd(p, t, T::set1(-0.18628806f));
    p = T::fmadd(p, t, T::set1(0.09678418f));
    p = T::fmadd(p, t, T::set1(0.37409196f));
    p = T::fmadd(p, t, T::set1(1.00002368f));
    p = T::fmadd(p, t, T::set1(-1.26551223f));
    const F z2 = T::mul(z, z);
    const F z2_lo = T::mul_error(z, z, z2);
    return T::mul(t, exp2(T::sub(T::set1(0.0f), z2), T::sub(p, z2_lo)));
  }

  static F tanh(F x) {
    const F ax = T::abs(x);
    const F z = T::mul(x, x);
    F p = T::set1(-5.70498872745e-3f);
    p = T::fmadd(p, z, T::set1(2.06390887954e-2f));
    p = T::fmadd(p, z, T::set1(-5.37397155531e-2f));
    p = T::fmadd(p, z, T::set1(1.33314422036e-1f));
    p = T::fmadd(p, z, T::set1(-3.33332819422e-1f));
    const F small = T::fmadd(T::mul(p, z), x, x);
    const F e = exp(T::add(ax, ax));
    const F one = T::set1(1.0f);
    const F large = T::copy_sign(T::sub(one, T::div(T::set1(2.0f), T::add(e, one))), x);
    return T::select(T::lt(ax, T::set1(0.625f)), small, large);
  }

  // Rational minimax on |x| < 2 (as Eigen/XLA; ~3e-7 relative in float); beyond,
  // sign(x) * (1 - erfc(|x|)), where erfc < 0.005 makes its error negligible.
  static F erf(F a) {
    const F ax = T::abs(a);
    const F large = T::copy_sign(T::sub(T::set1(1.0f), erfc_pos(T::min(T::set1(12.0f), ax))), a);
    return T::select(T::lt(ax, T::set1(2.0f)), erf_small(a), large);
  }

  // The rational part of erf, for |a| < 2 (a is clamped there).
  static F erf_small(F a) {
    const F x = T::min(T::set1(2.0f), T::max(T::set1(-2.0f), a));
    const F x2 = T::mul(x, x);
    F p = T::set1(-2.72614225801306e-10f);
    p = T::fmadd(x2, p, T::set1(2.77068142495902e-08f));
    p = T::fmadd(x2, p, T::set1(-2.10102402082508e-06f));
    p = T::fmadd(x2, p, T::set1(-5.69250639462346e-05f));
    p = T::fmadd(x2, p, T::set1(-7.34990630326855e-04f));
    p = T::fmadd(x2, p, T::set1(-2.95459980854025e-03f));
    p = T::fmadd(x2, p, T::set1(-1.60960333262415e-02f));
    p = T::mul(x, p);
    F q = T::set1(-1.45660718464996e-05f);
    q = T::fmadd(x2, q, T::set1(-2.13374055278905e-04f));
    q = T::fmadd(x2, q, T::set1(-1.68282697438203e-03f));
    q = T::fmadd(x2, q, T::set1(-7.37332916720468e-03f));
    q = T::fmadd(x2, q, T::set1(-1.42647390514189e-02f));
    return T::div(p, q);
  }

  static F sigmoid(F x) {
    const F one = T::set1(1.0f);
    return T::div(one, T::add(one, exp(T::sub(T::set1(0.0f), x))));
  }

  // 0.5 x (1 + erf(x / sqrt 2)), as h + h*erf with h = x/2. Below x = -sqrt(1/2), where
  // 1 + erf starts to cancel, as h * erfc(-x / sqrt 2) instead.
  static F gelu_erf(F x) {
    const F h = T::mul(x, T::set1(0.5f));
    const F z = T::mul(x, T::set1(0.70710678118654752f));
    // One erfc serves both tails: h*erfc(|z|) below, h*(2 - erfc(z)) for z >= 2.
    const F c = erfc_pos(T::min(T::set1(12.0f), T::abs(z)));
    const F middle = T::fmadd(h, erf_small(z), h);
    const F upper = T::mul(h, T::sub(T::set1(2.0f), c));
    return T::select(T::lt(z, T::set1(-0.5f)), T::mul(h, c), T::select(T::lt(z, T::set1(2.0f)), middle, upper));
  }

  // GeLU(erf) for octet.QMatMul's epilogue, whose result is quantized to u8 right after
  // (issue 20: this GeLU was 9% of MiniLM's int8 time). x * P(r), P a degree-4 polynomial
  // of Phi(x) on one of 32 segments of width 0.375 (gelu_table.h, fitted by
  // bench/gelu_table_fit.py): segment n = round(x / 0.375), taken from the low bits of
  // x / 0.375 + 1.5 * 2^23 (the rounding happens in that one add), r = x - 0.375 n, exact.
  // 13 vector ops under AVX-512 (clamp 2, segment 3, 5 permutes, 4 FMAs, the product)
  // where the A&S 7.1.26 form took a division, an exp and ~33 ops. |error| <= 4.1e-7, and
  // <= 2.1e-7 |x| (cpu_vec_test, against double erf over a sweep of all floats).
  // x is clamped to [-6.18, 5.81]: the outer segments are P = 0 (x <= -5.81, where
  // |GeLU| < 2e-8) and P = 1 (x >= 5.44, GeLU(x) = x to 1.5e-7), so the tails need no
  // select: far negative x gives -0, +inf gives +inf, -inf gives NaN (inf * 0) and NaN
  // stays NaN (the clamp keeps it), all as gelu_erf.
  static F gelu_erf_fast(F x) {
    const F magic = T::set1(0x1.8p23f);
    if constexpr (T::kLookup32) {
      const F c = T::min(T::set1(kGeluPhiHi), T::max(T::set1(kGeluPhiLo), x));
      const F u = T::fmadd(c, T::set1(1.0f / kGeluPhiWidth), magic);
      const F r = T::fmadd(T::sub(u, magic), T::set1(-kGeluPhiWidth), c);
      F p = T::lookup32(kGeluPhi[kGeluPhiDegree], u);
      for (int j = kGeluPhiDegree - 1; j >= 0; --j) p = T::fmadd(p, r, T::lookup32(kGeluPhi[j], u));
      return T::mul(x, p);
    } else {
      // Where only 16-entry lookups are cheap (AVX2: two vpermps and a blend), the
      // segments n >= 0 on |x| and Phi(-a) = 1 - Phi(a): GeLU(x) = |x| P(|x|) + min(x, 0).
      // The add cancels for x << 0 (|error| <= half an ulp of x, within the bound above);
      // far negative x gives +0, -inf NaN, NaN stays NaN.
      const F ax = T::abs(x);
      const F c = T::min(T::set1(kGeluPhiHi), ax);
      const F u = T::fmadd(c, T::set1(1.0f / kGeluPhiWidth), magic);
      const F r = T::fmadd(T::sub(u, magic), T::set1(-kGeluPhiWidth), c);
      F p = T::lookup16(kGeluPhi[kGeluPhiDegree], u);
      for (int j = kGeluPhiDegree - 1; j >= 0; --j) p = T::fmadd(p, r, T::lookup16(kGeluPhi[j], u));
      return T::add(T::mul(ax, p), T::min(x, T::set1(0.0f)));
    }
  }

  // 0.5 x (1 + tanh(u)) == x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3).
  static F gelu_tanh(F x) {
    const F x3 = T::mul(T::mul(x, x), x);
    const F u2 = T::mul(T::fmadd(x3, T::set1(0.044715f), x), T::set1(-2.0f * 0.79788456080286536f));
    return T::div(x, T::add(T::set1(1.0f), exp(u2)));
  }
};

// y[i] = f(x[i]); the tail goes through masked loads/stores (W=1 never has one).
template <class T, class Fn>
inline void map_row(const float* x, float* y, int64_t n, Fn f) {
  int64_t i = 0;
  for (; i + T::kWidth <= n; i += T::kWidth) T::store(y + i, f(T::load(x + i)));
  if (i < n) T::store_tail(y + i, f(T::load_tail(x + i, n - i, 0.0f)), n - i);
}

template <class T, class Fn>
inline void map_row2(const float* a, const float* b, float* y, int64_t n, Fn f) {
  int64_t i = 0;
  for (; i + T::kWidth <= n; i += T::kWidth) T::store(y + i, f(T::load(a + i), T::load(b + i)));
  if (i < n) T::store_tail(y + i, f(T::load_tail(a + i, n - i, 1.0f), T::load_tail(b + i, n - i, 1.0f)), n - i);
}

template <class T>
float row_max(const float* x, int64_t n) {
  using F = typename T::F;
  const float ninf = -__builtin_inff();
  F m0 = T::set1(ninf), m1 = m0;
  int64_t i = 0;
  for (; i + 2 * T::kWidth <= n; i += 2 * T::kWidth) {
    m0 = T::max(m0, T::load(x + i));
    m1 = T::max(m1, T::load(x + i + T::kWidth));
  }
  for (; i + T::kWidth <= n; i += T::kWidth) m0 = T::max(m0, T::load(x + i));
  if (i < n) m1 = T::max(m1, T::load_tail(x + i, n - i, ninf));
  return T::reduce_max(T::max(m0, m1));
}

// Four accumulators: independent add chains, and smaller partial sums for accuracy.
template <class T, class Fn>
float row_sum_of(const float* x, int64_t n, float fill, Fn f) {
  using F = typename T::F;
  F s0 = T::set1(0.0f), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 4 * T::kWidth <= n; i += 4 * T::kWidth) {
    s0 = T::add(s0, f(T::load(x + i)));
    s1 = T::add(s1, f(T::load(x + i + T::kWidth)));
    s2 = T::add(s2, f(T::load(x + i + 2 * T::kWidth)));
    s3 = T::add(s3, f(T::load(x + i + 3 * T::kWidth)));
  }
  for (; i + T::kWidth <= n; i += T::kWidth) s0 = T::add(s0, f(T::load(x + i)));
  if (i < n) s1 = T::add(s1, f(T::load_tail(x + i, n - i, fill)));
  return T::reduce_add(T::add(T::add(s0, s1), T::add(s2, s3)));
}

template <class T>
float row_sum(const float* x, int64_t n) {
  return row_sum_of<T>(x, n, 0.0f, [](auto v) { return v; });
}

template <class T>
void row_scale(const float* x, float s, float* y, int64_t n) {
  const auto vs = T::set1(s);
  map_row<T>(x, y, n, [&](auto v) { return T::mul(v, vs); });
}

template <class T>
float row_exp_sum(const float* x, float scale, float shift, float* y, int64_t n) {
  using F = typename T::F;
  const F vs = T::set1(scale), vshift = T::set1(-shift);
  auto e_at = [&](int64_t i) {
    const F e = Math<T>::exp_flush(T::fmadd(T::load(x + i), vs, vshift));
    T::store(y + i, e);
    return e;
  };
  // Four accumulators, as row_sum_of: shorter add chains and smaller partial sums (the
  // scalar build otherwise sums a 4K row in one float).
  F s0 = T::set1(0.0f), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 4 * T::kWidth <= n; i += 4 * T::kWidth) {
    s0 = T::add(s0, e_at(i));
    s1 = T::add(s1, e_at(i + T::kWidth));
    s2 = T::add(s2, e_at(i + 2 * T::kWidth));
    s3 = T::add(s3, e_at(i + 3 * T::kWidth));
  }
  for (; i + T::kWidth <= n; i += T::kWidth) s0 = T::add(s0, e_at(i));
  if (i < n) {
    // Tail lanes read -inf, whose exp is 0, so they add nothing to the sum.
    const F e = Math<T>::exp_flush(T::fmadd(T::load_tail(x + i, n - i, -__builtin_inff()), vs, vshift));
    T::store_tail(y + i, e, n - i);
    s1 = T::add(s1, e);
  }
  return T::reduce_add(T::add(T::add(s0, s1), T::add(s2, s3)));
}

template <class T>
void row_softmax(const float* x, float* y, int64_t n, float scale) {
  const float m = row_max<T>(x, n) * scale;
  const float s = row_exp_sum<T>(x, scale, m, y, n);
  row_scale<T>(y, 1.0f / s, y, n);
}

// A normalized row's statistics: y = (x - mean) * inv * gamma (+ beta).
struct NormStats {
  float mean, inv;
};

template <class T>
NormStats row_norm_stats(const float* x, int64_t n, float eps, bool center) {
  using F = typename T::F;
  const float inv_n = 1.0f / static_cast<float>(n);
  const float mean = center ? row_sum<T>(x, n) * inv_n : 0.0f;
  const F vm = T::set1(mean);
  // Two passes (mean, then squared deviations): no E[x^2] - E[x]^2 cancellation.
  // Tail lanes read the mean itself, so they add 0.
  const float sq = row_sum_of<T>(x, n, mean, [&](F v) {
    const F d = T::sub(v, vm);
    return T::mul(d, d);
  });
  return {mean, 1.0f / __builtin_sqrtf(sq * inv_n + eps)};
}

// y = (x - mean) * inv * gamma (+ beta); with kRange also y's range as min_max_row takes it
// (0 included -- tail lanes give 0 --, NaN skipped by the operand order) into *mn, *mx.
template <class T, bool kRange>
void row_norm_apply(const float* x, float* y, int64_t n, const float* gamma, const float* beta, NormStats st,
                    float* mn, float* mx) {
  using F = typename T::F;
  const F vm = T::set1(st.mean), vi = T::set1(st.inv), zero = T::set1(0.0f);
  F lo = zero, hi = zero;
  auto out = [&](F v, F g, const float* b, int64_t at, int64_t count) {
    F r = T::mul(T::mul(T::sub(v, vm), vi), g);
    if (b) r = T::add(r, count == T::kWidth ? T::load(b + at) : T::load_tail(b + at, count, 0.0f));
    if constexpr (kRange) {
      lo = T::min(r, lo);
      hi = T::max(r, hi);
    }
    return r;
  };
  int64_t i = 0;
  for (; i + T::kWidth <= n; i += T::kWidth)
    T::store(y + i, out(T::load(x + i), T::load(gamma + i), beta, i, T::kWidth));
  if (i < n)
    T::store_tail(y + i, out(T::load_tail(x + i, n - i, 0.0f), T::load_tail(gamma + i, n - i, 0.0f), beta, i, n - i),
                  n - i);
  if constexpr (kRange) {
    *mn = 0.0f - T::reduce_max(T::sub(zero, lo));
    *mx = T::reduce_max(hi);
  }
}

template <class T>
void row_norm(const float* x, float* y, int64_t n, const float* gamma, const float* beta, float eps,
              bool center) {
  row_norm_apply<T, false>(x, y, n, gamma, beta, row_norm_stats<T>(x, n, eps, center), nullptr, nullptr);
}

template <class T>
void row_norm2(const float* x, int64_t n, float eps, const NormOutput& first, const NormOutput& second, float* mn,
               float* mx) {
  const NormStats st = row_norm_stats<T>(x, n, eps, true);
  if (mn && mx) row_norm_apply<T, true>(x, first.y, n, first.gamma, first.beta, st, mn, mx);
  else row_norm_apply<T, false>(x, first.y, n, first.gamma, first.beta, st, nullptr, nullptr);
  if (second.y) row_norm_apply<T, false>(x, second.y, n, second.gamma, second.beta, st, nullptr, nullptr);
}

template <class T, BinaryOp Op>
inline typename T::F binary_apply(typename T::F a, typename T::F b) {
  if constexpr (Op == BinaryOp::Add) return T::add(a, b);
  else if constexpr (Op == BinaryOp::Sub) return T::sub(a, b);
  else if constexpr (Op == BinaryOp::Mul) return T::mul(a, b);
  else return T::div(a, b);
}

template <class T, BinaryOp Op>
void binary_row(const float* a, const float* b, float* y, int64_t n) {
  map_row2<T>(a, b, y, n, [](auto u, auto v) { return binary_apply<T, Op>(u, v); });
}

template <class T, BinaryOp Op>
void binary_rhs_row(const float* a, float b, float* y, int64_t n) {
  const auto vb = T::set1(b);
  map_row<T>(a, y, n, [&](auto u) { return binary_apply<T, Op>(u, vb); });
}

template <class T, BinaryOp Op>
void binary_lhs_row(const float* a, float b, float* y, int64_t n) {
  const auto vb = T::set1(b);
  map_row<T>(a, y, n, [&](auto u) { return binary_apply<T, Op>(vb, u); });
}

template <class T, class Fn>
void unary_row(const float* x, float* y, int64_t n) {
  map_row<T>(x, y, n, [](auto v) { return Fn::apply(v); });
}

// SwiGLU's gate: (g * sigmoid(g)) * u in Sigmoid, Mul, Mul's order and roundings.
template <class T>
void swiglu_row(const float* g, const float* u, float* y, int64_t n) {
  map_row2<T>(g, u, y, n, [](auto a, auto b) { return T::mul(T::mul(a, Math<T>::sigmoid(a)), b); });
}

#define OCTET_SIMD_UNARY(Name, expr)               \
  template <class T>                               \
  struct Name {                                    \
    static typename T::F apply(typename T::F v) {  \
      return expr;                                 \
    }                                              \
  };
OCTET_SIMD_UNARY(ExpFn, Math<T>::exp(v))
OCTET_SIMD_UNARY(TanhFn, Math<T>::tanh(v))
OCTET_SIMD_UNARY(ErfFn, Math<T>::erf(v))
OCTET_SIMD_UNARY(SigmoidFn, Math<T>::sigmoid(v))
OCTET_SIMD_UNARY(SqrtFn, T::sqrt(v))
// max(0, x): the second operand wins on NaN, so Relu(NaN) is NaN and Relu(-0) is -0,
// as the reference's `v < 0 ? 0 : v`.
OCTET_SIMD_UNARY(ReluFn, T::max(T::set1(0.0f), v))
OCTET_SIMD_UNARY(GeluErfFn, Math<T>::gelu_erf(v))
OCTET_SIMD_UNARY(GeluTanhFn, Math<T>::gelu_tanh(v))
OCTET_SIMD_UNARY(GeluErfFastFn, Math<T>::gelu_erf_fast(v))
#undef OCTET_SIMD_UNARY

// Overrides every entry of `t` with this ISA's versions.
template <class T>
void fill_table(VecTable& t, const char* name) {
  t.name = name;
  t.max = row_max<T>;
  t.sum = row_sum<T>;
  t.scale = row_scale<T>;
  t.exp_sum = row_exp_sum<T>;
  t.softmax_row = row_softmax<T>;
  t.norm_row = row_norm<T>;
  t.norm_row2 = row_norm2<T>;
  t.swiglu = swiglu_row<T>;
  t.unary[static_cast<int>(UnaryOp::Exp)] = unary_row<T, ExpFn<T>>;
  t.unary[static_cast<int>(UnaryOp::Tanh)] = unary_row<T, TanhFn<T>>;
  t.unary[static_cast<int>(UnaryOp::Erf)] = unary_row<T, ErfFn<T>>;
  t.unary[static_cast<int>(UnaryOp::Sigmoid)] = unary_row<T, SigmoidFn<T>>;
  t.unary[static_cast<int>(UnaryOp::Sqrt)] = unary_row<T, SqrtFn<T>>;
  t.unary[static_cast<int>(UnaryOp::Relu)] = unary_row<T, ReluFn<T>>;
  t.unary[static_cast<int>(UnaryOp::GeluErf)] = unary_row<T, GeluErfFn<T>>;
  t.unary[static_cast<int>(UnaryOp::GeluTanh)] = unary_row<T, GeluTanhFn<T>>;
  t.unary[static_cast<int>(UnaryOp::GeluErfFast)] = unary_row<T, GeluErfFastFn<T>>;
  constexpr int kAdd = static_cast<int>(BinaryOp::Add), kSub = static_cast<int>(BinaryOp::Sub),
                kMul = static_cast<int>(BinaryOp::Mul), kDiv = static_cast<int>(BinaryOp::Div);
  t.binary[kAdd] = binary_row<T, BinaryOp::Add>;
  t.binary[kSub] = binary_row<T, BinaryOp::Sub>;
  t.binary[kMul] = binary_row<T, BinaryOp::Mul>;
  t.binary[kDiv] = binary_row<T, BinaryOp::Div>;
  t.binary_rhs[kAdd] = binary_rhs_row<T, BinaryOp::Add>;
  t.binary_rhs[kSub] = binary_rhs_row<T, BinaryOp::Sub>;
  t.binary_rhs[kMul] = binary_rhs_row<T, BinaryOp::Mul>;
  t.binary_rhs[kDiv] = binary_rhs_row<T, BinaryOp::Div>;
  t.binary_lhs[kAdd] = binary_lhs_row<T, BinaryOp::Add>;
  t.binary_lhs[kSub] = binary_lhs_row<T, BinaryOp::Sub>;
  t.binary_lhs[kMul] = binary_lhs_row<T, BinaryOp::Mul>;
  t.binary_lhs[kDiv] = binary_lhs_row<T, BinaryOp::Div>;
}

}  // namespace
}  // namespace octet::cpu::simd
