#include "runtime/tensor_check.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace octet {

namespace {

bool is_complex(DType t) { return t == DType::Complex64 || t == DType::Complex128; }

// Every element (complex: every real and imaginary part) as double. Integers wider than
// 53 bits lose precision here, which only blurs statistics of huge values; comparison of
// integers uses exact arithmetic below.
std::vector<double> as_doubles(const Tensor& t) {
  const int64_t n = t.numel();
  std::vector<double> out;
  switch (t.dtype()) {
    case DType::Float64:
    case DType::Complex128: {
      out.resize(static_cast<size_t>(t.dtype() == DType::Complex128 ? 2 * n : n));
      if (!out.empty()) std::memcpy(out.data(), t.raw(), out.size() * sizeof(double));
      return out;
    }
    case DType::Complex64: {
      std::vector<float> f(static_cast<size_t>(2 * n));
      if (!f.empty()) std::memcpy(f.data(), t.raw(), f.size() * sizeof(float));
      return {f.begin(), f.end()};
    }
    case DType::UInt64: {
      out.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        uint64_t v;
        std::memcpy(&v, t.raw() + 8 * i, 8);
        out[i] = static_cast<double>(v);
      }
      return out;
    }
    default: {
      std::vector<float> f = t.to_float_vector();
      return {f.begin(), f.end()};
    }
  }
}

bool exact_integers(DType t) {
  return (dtype_is_integer(t) && dtype_bits(t) >= 8) || t == DType::Bool;
}

}  // namespace

std::vector<int64_t> unravel_index(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0) return index;
    index[i] = flat % shape[i];
    flat /= shape[i];
  }
  return index;
}

TensorStats tensor_stats(const Tensor& t) {
  TensorStats s;
  s.count = t.numel();
  if (t.dtype() == DType::String) return s;
  std::vector<double> v;
  try {
    v = as_doubles(t);
  } catch (const Error&) {
    return s;  // types without a numeric reading here (sub-byte, float8): counts only
  }
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  for (double x : v) {
    if (std::isnan(x)) ++s.nan;
    else if (std::isinf(x)) ++(x > 0 ? s.pos_inf : s.neg_inf);
    else {
      ++s.finite;
      lo = std::min(lo, x), hi = std::max(hi, x), sum += x;
    }
  }
  if (s.finite > 0) s.min = lo, s.max = hi, s.mean = sum / static_cast<double>(s.finite);
  return s;
}

Comparison compare_tensors(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  Comparison c;
  if (actual.dtype() != expected.dtype()) {
    c.problem = "dtype " + dtype_name(actual.dtype()) + ", expected " + dtype_name(expected.dtype());
    return c;
  }
  if (actual.shape() != expected.shape()) {
    c.problem = "shape " + shape_to_string(actual.shape()) + ", expected " + shape_to_string(expected.shape());
    return c;
  }
  c.count = actual.numel();
  if (actual.dtype() == DType::String) {
    for (int64_t i = 0; i < c.count; ++i)
      if (actual.string_data()[i] != expected.string_data()[i]) {
        if (c.mismatched++ == 0) c.worst_index = unravel_index(i, actual.shape());
      }
    return c;
  }
  std::vector<double> a, e;
  try {
    a = as_doubles(actual), e = as_doubles(expected);
  } catch (const Error&) {
    // Sub-byte and float8 data: bytes must match exactly.
    if (actual.bytes() != expected.bytes() ||
        (actual.bytes() && std::memcmp(actual.raw(), expected.raw(), actual.bytes()) != 0))
      c.problem = dtype_name(actual.dtype()) + " contents differ";
    return c;
  }
  // Integers are compared exactly when no tolerance applies: doubles would merge
  // neighbouring int64 values above 2^53.
  std::vector<int64_t> ai, ei;
  if (exact_integers(actual.dtype()) && actual.dtype() != DType::UInt64)
    ai = actual.to_int64_vector(), ei = expected.to_int64_vector();
  const int64_t parts = is_complex(actual.dtype()) ? 2 : 1;
  double worst_excess = 0;
  int64_t worst = -1;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], y = e[i];
    double abs_err = 0;
    if (!ai.empty()) {
      if (ai[i] == ei[i]) continue;
      abs_err = std::max(1.0, std::fabs(x - y));
    } else {
      if ((std::isnan(x) && std::isnan(y)) || x == y) continue;
      // As in numpy.isclose, a NaN or an infinity matches only its equal.
      abs_err = std::isfinite(x) && std::isfinite(y) ? std::fabs(x - y) : std::numeric_limits<double>::infinity();
    }
    const double tol = atol + rtol * std::fabs(y);
    c.max_abs_error = std::max(c.max_abs_error, abs_err);
    if (y != 0 && !std::isnan(y)) c.max_rel_error = std::max(c.max_rel_error, abs_err / std::fabs(y));
    if (std::isinf(abs_err) || !(abs_err <= tol)) ++c.mismatched;
    // inf - inf is NaN: an infinite error at an infinite tolerance still ranks first.
    double excess = abs_err - tol;
    if (std::isnan(excess)) excess = std::numeric_limits<double>::infinity();
    if (worst < 0 || excess > worst_excess) worst = static_cast<int64_t>(i), worst_excess = excess;
  }
  if (worst >= 0) {
    c.worst_index = unravel_index(worst / parts, actual.shape());
    c.worst_actual = a[worst], c.worst_expected = e[worst];
  }
  return c;
}

}  // namespace octet
