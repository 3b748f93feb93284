// Streaming per-tensor statistics for calibration, in fixed memory: the calibrator feeds
// every activation of every sample through an observer and keeps nothing else, so a
// thousand samples cost no more memory than one.
//
// Non-finite values (NaN, +-inf) are counted but never enter a range: one NaN from a
// degenerate sample must not make a whole tensor unquantizable. A tensor that never
// showed a finite value is an error when its range is asked for, naming the tensor.
//
// HistogramObserver's grid. Bin k covers [(first_bin() + k) * w, (first_bin() + k + 1) * w)
// with w = bin_width(): the grid is anchored at 0, not at the data's minimum. The first
// batch with two distinct finite values sets w = (max - min) / (bins - 2) and centres the
// window of `bins` bins on the data. When later data falls outside the window, w is
// multiplied by the smallest power of two 2^m for which [min, max] fits (m = 0: the
// window only moves). Because both grids are anchored at 0 and every new edge is an old
// edge, old bin t merges whole into new bin floor(t / 2^m): no count is split or guessed.
// Indices are computed as floor(x * inv_w) in double with inv_w scaled by the same power
// of two, and scaling by a power of two commutes with rounding, so a value lands in the
// bin it would have if the final grid had been used from the start: the histogram after
// any number of widenings equals the histogram of all the data binned on the final grid.
// Anchoring at 0 also makes 0 a bin edge, so folding into a |x| histogram (entropy) is
// exact. (Each window holds [min, max] in at least half of its bins, so resolution is
// within 2x of a histogram built with hindsight.) Data seen while every finite value was
// the same number is kept as a point mass until a second value fixes the grid. Exact
// running min and max are kept beside the bins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace octet::quant {

class MinMaxObserver {
 public:
  // `name` (the tensor's) goes into error messages.
  explicit MinMaxObserver(std::string name = "");
  void observe(const float* x, size_t n);

  // Smallest / largest finite value; an error naming the tensor when there was none.
  float min() const;
  float max() const;
  uint64_t count() const { return count_; }               // finite values seen
  uint64_t nonfinite_count() const { return nonfinite_; }  // NaN and +-inf skipped
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  float min_ = 0, max_ = 0;
  uint64_t count_ = 0, nonfinite_ = 0;
};

class HistogramObserver {
 public:
  static constexpr int kDefaultBins = 2048;

  explicit HistogramObserver(std::string name = "", int bins = kDefaultBins);
  void observe(const float* x, size_t n);

  // Exact smallest / largest finite value; an error naming the tensor when there was none.
  float min() const;
  float max() const;
  uint64_t count() const { return count_; }               // finite values seen
  uint64_t nonfinite_count() const { return nonfinite_; }  // NaN and +-inf skipped
  const std::string& name() const { return name_; }

  int bins() const { return static_cast<int>(counts_.size()); }
  // False until two distinct finite values were seen (all data then equals min()); the
  // grid accessors below are meaningful only when true.
  bool has_grid() const { return has_grid_; }
  double bin_width() const { return width_; }
  int64_t first_bin() const { return first_; }
  double bin_lo(int k) const { return static_cast<double>(first_ + k) * width_; }
  const std::vector<uint64_t>& counts() const { return counts_; }

 private:
  void start_grid(float lo, float hi);
  void fit(float lo, float hi);
  int index(float x) const;

  std::string name_;
  std::vector<uint64_t> counts_;
  bool has_grid_ = false;
  double width_ = 0, inv_width_ = 0;
  int64_t first_ = 0;
  float min_ = 0, max_ = 0;
  uint64_t count_ = 0, nonfinite_ = 0;
};

}  // namespace octet::quant
