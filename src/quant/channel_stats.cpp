#include "quant/channel_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "octet/error.h"

namespace octet::quant {

ChannelStatsObserver::ChannelStatsObserver(std::string name, int64_t channels, size_t max_rows)
    : name_(std::move(name)),
      channels_(channels),
      max_rows_(max_rows),
      min_(static_cast<size_t>(channels), std::numeric_limits<float>::infinity()),
      max_(static_cast<size_t>(channels), -std::numeric_limits<float>::infinity()) {
  if (channels <= 0) fail("channel statistics for '", name_, "': channel count ", channels, " is not positive");
}

void ChannelStatsObserver::observe(const Tensor& t) {
  if (t.dtype() != DType::Float32) fail("channel statistics: tensor '", name_, "' is ", dtype_name(t.dtype()), ", not float32");
  if (t.rank() == 0 || t.shape().back() != channels_)
    fail("channel statistics: tensor '", name_, "' has shape ", shape_to_string(t.shape()), ", expected last dim ",
         channels_);
  const float* x = t.data<float>();
  const size_t k = static_cast<size_t>(channels_);
  const size_t rows = static_cast<size_t>(t.numel()) / k;
  for (size_t r = 0; r < rows; ++r) {
    const float* row = x + r * k;
    for (size_t j = 0; j < k; ++j) {
      const float v = row[j];
      if (!std::isfinite(v)) continue;
      min_[j] = std::min(min_[j], v);
      max_[j] = std::max(max_[j], v);
    }
    if (max_rows_) keep_row(row);
    ++rows_seen_;
  }
}

// Reservoir sampling (Vitter's algorithm R): after n rows, each has been kept with
// probability max_rows / n. Rows holding a non-finite value are kept as they are; the
// alpha search skips them.
void ChannelStatsObserver::keep_row(const float* row) {
  const size_t k = static_cast<size_t>(channels_);
  if (rows() < max_rows_) {
    rows_.insert(rows_.end(), row, row + k);
    return;
  }
  std::uniform_int_distribution<uint64_t> pick(0, rows_seen_);
  const uint64_t slot = pick(rng_);
  if (slot < max_rows_) std::copy(row, row + k, rows_.begin() + static_cast<std::ptrdiff_t>(slot * k));
}

std::vector<float> ChannelStatsObserver::abs_max() const {
  std::vector<float> a(min_.size(), 0.0f);
  for (size_t j = 0; j < a.size(); ++j)
    if (min_[j] <= max_[j]) a[j] = std::max(std::fabs(min_[j]), std::fabs(max_[j]));
  return a;
}

double outlier_ratio(const std::vector<float>& abs_max) {
  if (abs_max.empty()) return 0;
  std::vector<float> sorted(abs_max);
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  const double median = sorted[sorted.size() / 2];
  const double top = *std::max_element(abs_max.begin(), abs_max.end());
  if (top == 0) return 0;
  return median > 0 ? top / median : std::numeric_limits<double>::infinity();
}

}  // namespace octet::quant
