// The int8 row kernels of quant_table.h, written once over a traits type Q (a vec traits
// type from traits_*.h plus the integer and byte operations below) and compiled once per
// ISA level in quant_ops_<isa>.cpp. Anonymous namespace: each ISA's copy stays private to
// its translation unit (see vec_impl.h).
//
// Q adds to the float traits T:
//   I set1_i(int32_t), add_i(I, I), sub_i(I, I), mullo_i(I, I), load_i(const int32_t*),
//   load_i_tail(const int32_t*, n)
//   M is_nan(F)                       lanes that hold NaN
//   bool all_lanes(M)                 every lane of a comparison is true
//   void store_bytes(uint8_t*, I)     the low byte of each lane (kWidth bytes)
//   void store_bytes_tail(uint8_t*, I, n)
//   I load_bytes(const uint8_t*, bool is_signed), load_bytes_tail(const uint8_t*, n, bool)
//   F nearest_fraction(F t)          t - round(t) (round half to even), exact
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/simd/quant_table.h"
#include "kernels/cpu/simd/vec_impl.h"  // Math<T>: the GeLU forms of the vec table at this level

namespace octet::cpu::simd {
namespace {

template <class Q>
typename Q::I quantize_vec(typename Q::F x, typename Q::F nan_value, typename Q::F scale, typename Q::F lo,
                           typename Q::F hi, typename Q::I zp) {
  using F = typename Q::F;
  F q = Q::div(x, scale);
  q = Q::select(Q::is_nan(q), nan_value, q);
  // Clamping before rounding equals clamping after: the bounds are integers.
  q = Q::min(hi, Q::max(lo, q));
  return Q::add_i(Q::round_to_int(q), zp);
}

// quantize_vec by a multiply where that rounds to the same integers, or null. t = x * inv
// (inv = 1 / scale, rounded) is within 3 ulps of x / scale (roundings of inv and of the
// product against the quotient's one), so where the clamped t lies farther than
// |t| 2^-20 (> 3 ulps) from a half-integer, both round to the same integer: clamping to
// integer bounds commutes with rounding, and moves t and the quotient by no more than
// their distance. A vector with a lane that close -- rare, or a NaN / infinity -- is
// divided by the caller. The division alone cost ~9% of a MiniLM int8 run on an Intel
// host, where a 512-bit VDIVPS has ~1/16 of a multiply's throughput.
// `limit` is one bound for the whole row, below 0.5 - |t| 2^-20 for every clamped t
// (quantize_row_t): the per-lane bound cost two more operations per vector (issue 20).
template <class Q>
bool quantize_vec_by_inverse(typename Q::F x, typename Q::F inv, typename Q::F lo, typename Q::F hi,
                             typename Q::F limit, typename Q::I zp, typename Q::I* out) {
  using F = typename Q::F;
  const F t = Q::min(hi, Q::max(lo, Q::mul(x, inv)));
  if (!Q::all_lanes(Q::lt(Q::abs(Q::nearest_fraction(t)), limit))) return false;  // NaN compares false: divided
  *out = Q::add_i(Q::round_to_int(t), zp);
  return true;
}

template <class Q, bool kByInverse>
void quantize_row_t(const float* x, int64_t n, float scale, float inv, int32_t zp, int32_t lo, int32_t hi,
                    uint8_t* y) {
  using F = typename Q::F;
  // The clamp runs before the zero point is added: on [lo - zp, hi - zp]. NaN becomes 0,
  // clamped too, so it lands on clamp(zp, lo, hi).
  const F vs = Q::set1(scale), vinv = Q::set1(inv), vlo = Q::set1(static_cast<float>(lo - zp)),
          vhi = Q::set1(static_cast<float>(hi - zp));
  // Every clamped t has |t| <= reach, so 0.5 - (reach + 1) 2^-20, rounded (by at most
  // 2^-26), stays below each lane's 0.5 - |t| 2^-20. A reach past 2^19 gives a bound <= 0:
  // every vector divides.
  const double reach = std::max(std::fabs(static_cast<double>(lo) - zp), std::fabs(static_cast<double>(hi) - zp));
  const F vlimit = Q::set1(static_cast<float>(0.5 - std::min(reach + 1, 0x1p20) * 0x1p-20));
  const F nan_value = Q::min(vhi, Q::max(vlo, Q::set1(0.0f)));
  const auto vz = Q::set1_i(zp);
  auto one = [&](F v) {
    typename Q::I q;
    if (kByInverse && quantize_vec_by_inverse<Q>(v, vinv, vlo, vhi, vlimit, vz, &q)) return q;
    return quantize_vec<Q>(v, nan_value, vs, vlo, vhi, vz);
  };
  int64_t i = 0;
  for (; i + Q::kWidth <= n; i += Q::kWidth) Q::store_bytes(y + i, one(Q::load(x + i)));
  if (i < n) Q::store_bytes_tail(y + i, one(Q::load_tail(x + i, n - i, 0.0f)), n - i);
}

template <class Q>
void quantize_row(const float* x, int64_t n, float scale, int32_t zp, int32_t lo, int32_t hi, uint8_t* y) {
  // The bound above needs inv and the products normal; with a subnormal or infinite
  // inverse every vector divides.
  const float inv = 1.0f / scale;
  if (std::isnormal(scale) && std::isnormal(inv)) quantize_row_t<Q, true>(x, n, scale, inv, zp, lo, hi, y);
  else quantize_row_t<Q, false>(x, n, scale, inv, zp, lo, hi, y);
}

// x86 min/max return their second operand when either is NaN, so min(x, acc) keeps acc
// on a NaN x: NaN is skipped without a compare. The accumulators start at 0.
template <class Q>
void min_max_row(const float* x, int64_t n, float* mn, float* mx) {
  using F = typename Q::F;
  F lo = Q::set1(0.0f), hi = Q::set1(0.0f);
  int64_t i = 0;
  for (; i + Q::kWidth <= n; i += Q::kWidth) {
    const F v = Q::load(x + i);
    lo = Q::min(v, lo);
    hi = Q::max(v, hi);
  }
  if (i < n) {
    const F v = Q::load_tail(x + i, n - i, 0.0f);  // 0 in the unused lanes changes nothing
    lo = Q::min(v, lo);
    hi = Q::max(v, hi);
  }
  *mn = 0.0f - Q::reduce_max(Q::sub(Q::set1(0.0f), lo));  // 0 - max(-lo): +0 when nothing is negative
  *mx = Q::reduce_max(hi);
}

template <class Q>
float abs_max_row(const float* x, int64_t n) {
  using F = typename Q::F;
  F m = Q::set1(0.0f);
  int64_t i = 0;
  for (; i + Q::kWidth <= n; i += Q::kWidth) m = Q::max(Q::abs(Q::load(x + i)), m);
  if (i < n) m = Q::max(Q::abs(Q::load_tail(x + i, n - i, 0.0f)), m);
  return Q::reduce_max(m);
}

template <class Q>
void dequantize_row(const uint8_t* x, int64_t n, bool is_signed, int32_t zp, float scale, float* y) {
  const auto vz = Q::set1_i(zp);
  const auto vs = Q::set1(scale);
  int64_t i = 0;
  for (; i + Q::kWidth <= n; i += Q::kWidth)
    Q::store(y + i, Q::mul(Q::int_to_float(Q::sub_i(Q::load_bytes(x + i, is_signed), vz)), vs));
  if (i < n)
    Q::store_tail(y + i, Q::mul(Q::int_to_float(Q::sub_i(Q::load_bytes_tail(x + i, n - i, is_signed), vz)), vs), n - i);
}

template <class Q>
void scale_row_impl(const int32_t* acc, const int32_t* colsum, int32_t za, float row_scale, const float* col_scale,
                    const float* bias, float* y, int64_t n) {
  using F = typename Q::F;
  const auto vza = Q::set1_i(za);
  const F rs = Q::set1(row_scale);
  auto one = [&](typename Q::I a, typename Q::I c, F s, F b) {
    const F t = Q::int_to_float(Q::sub_i(a, Q::mullo_i(vza, c)));
    return Q::fmadd(Q::mul(rs, s), t, b);
  };
  int64_t i = 0;
  for (; i + Q::kWidth <= n; i += Q::kWidth)
    Q::store(y + i, one(Q::load_i(acc + i), Q::load_i(colsum + i), Q::load(col_scale + i),
                        bias ? Q::load(bias + i) : Q::set1(0.0f)));
  if (i < n) {
    const int64_t r = n - i;
    Q::store_tail(y + i, one(Q::load_i_tail(acc + i, r), Q::load_i_tail(colsum + i, r), Q::load_tail(col_scale + i, r, 0.0f),
                             bias ? Q::load_tail(bias + i, r, 0.0f) : Q::set1(0.0f)),
                  r);
  }
}

// Ends a row kernel's step: the value is rounded to float as the separate kernel stored it.
// Without it GCC may contract a multiply of one step and the add of the next into an FMA
// (-ffp-contract=fast is its default; it applies to the intrinsics' vector operators too),
// e.g. output_scale's product and the residual add: a different last bit.
template <class F>
inline F step_end(F v) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  asm("" : "+v"(v));
#endif
  return v;
}

// epilogue_row with its options as template arguments (no branches in the loop). Each
// step is the expression of the row kernel it replaces (scale_row_impl's `one`,
// unary_row's Math<T> GeLU, binary_row's mul / add), so every lane gets the same bits.
// The row's pointers are copied into locals first: the vector stores may alias anything,
// so GCC otherwise reloads each of them from `e` (and retests the bias) every iteration.
template <class Q, int kAct, bool kBias, bool kOutScale, bool kResidual, bool kMinMax>
void epilogue_row_t(const EpilogueRow& e, float* y, int64_t n, float* mn, float* mx) {
  using F = typename Q::F;
  using I = typename Q::I;
  const int32_t* const acc = e.acc;
  const int32_t* const colsum = e.colsum;
  const float* const col_scale = e.col_scale;
  const float* const bias = e.bias;
  const float* const out_scale = e.out_scale;
  const float* const residual = e.residual;
  const I vza = Q::set1_i(e.za);
  const F rs = Q::set1(e.row_scale), zero = Q::set1(0.0f);
  auto value = [&](I a, I c, F s, F b, F os, F res) {
    const F t = Q::int_to_float(Q::sub_i(a, Q::mullo_i(vza, c)));
    F v = step_end(kBias ? Q::fmadd(Q::mul(rs, s), t, b) : Q::fmadd(Q::mul(rs, s), t, zero));
    if constexpr (kAct == 1) v = step_end(Math<Q>::gelu_erf_fast(v));
    if constexpr (kAct == 2) v = step_end(Math<Q>::gelu_tanh(v));
    if constexpr (kOutScale) v = step_end(Q::mul(v, os));
    if constexpr (kResidual) v = Q::add(v, res);
    return v;
  };
  F lo = zero, hi = zero;  // min_max_row's accumulators (NaN skipped by the operand order)
  int64_t i = 0;
  for (; i + Q::kWidth <= n; i += Q::kWidth) {
    const F v = value(Q::load_i(acc + i), Q::load_i(colsum + i), Q::load(col_scale + i),
                      kBias ? Q::load(bias + i) : zero, kOutScale ? Q::load(out_scale + i) : zero,
                      kResidual ? Q::load(residual + i) : zero);
    Q::store(y + i, v);
    if constexpr (kMinMax) {
      lo = Q::min(v, lo);
      hi = Q::max(v, hi);
    }
  }
  if (i < n) {
    const int64_t r = n - i;
    const F v = value(Q::load_i_tail(acc + i, r), Q::load_i_tail(colsum + i, r), Q::load_tail(col_scale + i, r, 0.0f),
                      kBias ? Q::load_tail(bias + i, r, 0.0f) : zero,
                      kOutScale ? Q::load_tail(out_scale + i, r, 0.0f) : zero,
                      kResidual ? Q::load_tail(residual + i, r, 0.0f) : zero);
    Q::store_tail(y + i, v, r);
    if constexpr (kMinMax) {
      const F t = Q::load_tail(y + i, r, 0.0f);  // the unused lanes as 0, as min_max_row reads them
      lo = Q::min(t, lo);
      hi = Q::max(t, hi);
    }
  }
  if constexpr (kMinMax) {
    *mn = 0.0f - Q::reduce_max(Q::sub(zero, lo));
    *mx = Q::reduce_max(hi);
  }
}

template <class Q, int kAct, bool kBias, bool kOutScale, bool kResidual>
void epilogue_row_mm(const EpilogueRow& e, float* y, int64_t n, float* mn, float* mx) {
  if (mn && mx) epilogue_row_t<Q, kAct, kBias, kOutScale, kResidual, true>(e, y, n, mn, mx);
  else epilogue_row_t<Q, kAct, kBias, kOutScale, kResidual, false>(e, y, n, mn, mx);
}

template <class Q, int kAct, bool kBias>
void epilogue_row_opts(const EpilogueRow& e, float* y, int64_t n, float* mn, float* mx) {
  if (e.out_scale && e.residual) epilogue_row_mm<Q, kAct, kBias, true, true>(e, y, n, mn, mx);
  else if (e.out_scale) epilogue_row_mm<Q, kAct, kBias, true, false>(e, y, n, mn, mx);
  else if (e.residual) epilogue_row_mm<Q, kAct, kBias, false, true>(e, y, n, mn, mx);
  else epilogue_row_mm<Q, kAct, kBias, false, false>(e, y, n, mn, mx);
}

template <class Q, int kAct>
void epilogue_row_act(const EpilogueRow& e, float* y, int64_t n, float* mn, float* mx) {
  if (e.bias) epilogue_row_opts<Q, kAct, true>(e, y, n, mn, mx);
  else epilogue_row_opts<Q, kAct, false>(e, y, n, mn, mx);
}

template <class Q>
void epilogue_row_impl(const EpilogueRow& e, float* y, int64_t n, float* mn, float* mx) {
  if (e.activation == 1) epilogue_row_act<Q, 1>(e, y, n, mn, mx);
  else if (e.activation == 2) epilogue_row_act<Q, 2>(e, y, n, mn, mx);
  else epilogue_row_act<Q, 0>(e, y, n, mn, mx);
}

// One element of QLinearMatMul's requantization (the scalar definition every level shares).
inline uint8_t requantize_one(int32_t acc, double mult, double zp, int32_t lo, int32_t hi) {
  double v = std::nearbyint(static_cast<double>(acc) * mult) + zp;
  v = v < lo ? lo : (v > hi ? hi : v);
  return static_cast<uint8_t>(static_cast<int32_t>(v));
}

inline void requantize_scalar(const int32_t* acc, int64_t n, const double* mult, const double* zp, int32_t lo,
                              int32_t hi, uint8_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = requantize_one(acc[i], mult[i], zp[i], lo, hi);
}

template <class Q>
void fill_quant(QuantTable& t, const char* name) {
  t.name = name;
  t.quantize = quantize_row<Q>;
  t.min_max = min_max_row<Q>;
  t.abs_max = abs_max_row<Q>;
  t.dequantize = dequantize_row<Q>;
  t.scale_row = scale_row_impl<Q>;
  t.epilogue_row = epilogue_row_impl<Q>;
  t.requantize = requantize_scalar;
}

}  // namespace
}  // namespace octet::cpu::simd
