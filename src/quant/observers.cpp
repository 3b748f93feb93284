#include "quant/observers.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "octet/error.h"

namespace octet::quant {

namespace {

std::string tensor_label(const std::string& name) { return name.empty() ? "tensor" : "tensor '" + name + "'"; }

[[noreturn]] void no_finite_values(const std::string& name, uint64_t nonfinite) {
  fail(tensor_label(name), ": no finite value observed (", nonfinite,
       " NaN/inf values), so it has no range to quantize; check the calibration data or the model");
}

// Smallest and largest finite value of a batch; false when there is none.
bool finite_extent(const float* x, size_t n, float& lo, float& hi, uint64_t& finite) {
  finite = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;
    if (finite++ == 0) lo = hi = x[i];
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  return finite > 0;
}

// floor(t / 2^m) for any m >= 0 (C++20: >> on a negative value is an arithmetic shift).
int64_t floor_shift(int64_t t, int m) { return m >= 63 ? (t < 0 ? -1 : 0) : t >> m; }

}  // namespace

// ---- MinMaxObserver ----

MinMaxObserver::MinMaxObserver(std::string name) : name_(std::move(name)) {}

void MinMaxObserver::observe(const float* x, size_t n) {
  float lo = 0, hi = 0;
  uint64_t finite = 0;
  if (finite_extent(x, n, lo, hi, finite)) {
    min_ = count_ ? std::min(min_, lo) : lo;
    max_ = count_ ? std::max(max_, hi) : hi;
  }
  count_ += finite;
  nonfinite_ += n - finite;
}

float MinMaxObserver::min() const {
  if (!count_) no_finite_values(name_, nonfinite_);
  return min_;
}

float MinMaxObserver::max() const {
  if (!count_) no_finite_values(name_, nonfinite_);
  return max_;
}

// ---- HistogramObserver ----

HistogramObserver::HistogramObserver(std::string name, int bins) : name_(std::move(name)) {
  // Fewer than a handful of bins cannot hold a range with room to centre it.
  if (bins < 8) fail(tensor_label(name_), ": a histogram needs at least 8 bins, got ", bins);
  counts_.assign(static_cast<size_t>(bins), 0);
}

float HistogramObserver::min() const {
  if (!count_) no_finite_values(name_, nonfinite_);
  return min_;
}

float HistogramObserver::max() const {
  if (!count_) no_finite_values(name_, nonfinite_);
  return max_;
}

int HistogramObserver::index(float x) const {
  // Clamped only against rounding at the window's edges; fit() keeps every finite value
  // seen inside the window.
  const double t = std::floor(static_cast<double>(x) * inv_width_) - static_cast<double>(first_);
  return static_cast<int>(std::clamp(t, 0.0, static_cast<double>(bins() - 1)));
}

namespace {

// Where [lo, hi] lands at inverse width inv / 2^m for the smallest m that fits it in n bins.
struct Window {
  int m = 0;
  double inv = 0;
  int64_t low = 0, high = 0;  // bin indices of lo and hi
  int64_t centred_first(int64_t n) const { return low - (n - (high - low + 1)) / 2; }
};

Window window_for(float lo, float hi, double inv, int64_t n) {
  Window w;
  for (w.inv = inv;; ++w.m, w.inv *= 0.5) {
    const double tl = std::floor(static_cast<double>(lo) * w.inv);
    const double th = std::floor(static_cast<double>(hi) * w.inv);
    if (th - tl + 1 <= static_cast<double>(n)) {
      w.low = static_cast<int64_t>(tl);
      w.high = static_cast<int64_t>(th);
      return w;
    }
  }
}

}  // namespace

void HistogramObserver::start_grid(float lo, float hi) {
  // bins - 2: [lo, hi] then spans at most `bins` bins whatever its offset from a bin edge
  // (window_for doubles it in the rare case rounding says otherwise).
  const double width = (static_cast<double>(hi) - static_cast<double>(lo)) / (bins() - 2);
  const Window w = window_for(lo, hi, 1.0 / width, bins());
  width_ = std::ldexp(width, w.m);
  inv_width_ = w.inv;
  first_ = w.centred_first(bins());
  has_grid_ = true;
}

// Makes the window hold [lo, hi] (which contains every value seen so far): the smallest
// power-of-two widening, then centred; old bins merge whole into new ones.
void HistogramObserver::fit(float lo, float hi) {
  const int64_t n = bins();
  const Window w = window_for(lo, hi, inv_width_, n);
  if (w.m == 0 && w.low >= first_ && w.high < first_ + n) return;
  const int64_t first = w.centred_first(n);
  std::vector<uint64_t> merged(counts_.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    if (!counts_[k]) continue;
    const int64_t at = floor_shift(first_ + k, w.m) - first;
    merged[static_cast<size_t>(std::clamp<int64_t>(at, 0, n - 1))] += counts_[k];
  }
  counts_ = std::move(merged);
  first_ = first;
  width_ = std::ldexp(width_, w.m);  // exact: a power of two
  inv_width_ = w.inv;
}

void HistogramObserver::observe(const float* x, size_t n) {
  float lo = 0, hi = 0;
  uint64_t finite = 0;
  if (!finite_extent(x, n, lo, hi, finite)) {
    nonfinite_ += n;
    return;
  }
  const float new_min = count_ ? std::min(min_, lo) : lo;
  const float new_max = count_ ? std::max(max_, hi) : hi;
  if (!has_grid_ && new_min < new_max) {
    start_grid(new_min, new_max);
    if (count_) counts_[index(min_)] += count_;  // the point mass seen so far (all == min_)
  } else if (has_grid_) {
    fit(new_min, new_max);
  }
  if (has_grid_)
    for (size_t i = 0; i < n; ++i)
      if (std::isfinite(x[i])) ++counts_[index(x[i])];
  min_ = new_min;
  max_ = new_max;
  count_ += finite;
  nonfinite_ += n - finite;
}

}  // namespace octet::quant
