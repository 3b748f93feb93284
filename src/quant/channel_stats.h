// Per-channel statistics of an activation for SmoothQuant and --explain: the running
// min and max of every channel of the last axis (a MatMul's K), and a fixed-size uniform
// sample of whole rows for choosing alpha by measured error (--smoothquant auto).
// Memory is fixed: channels x 2 floats plus at most max_rows rows, however many samples
// are seen. Non-finite values are skipped, as the range observers do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace octet::quant {

class ChannelStatsObserver {
 public:
  // `channels` is the last-axis size every observed tensor must have; `max_rows` 0 keeps
  // no rows. `name` (the tensor's) goes into error messages.
  ChannelStatsObserver(std::string name, int64_t channels, size_t max_rows = 0);

  void observe(const Tensor& t);

  int64_t channels() const { return channels_; }
  const std::vector<float>& min() const { return min_; }  // +inf for a channel never seen finite
  const std::vector<float>& max() const { return max_; }  // -inf likewise
  // max|x_j| per channel (0 where nothing finite was seen).
  std::vector<float> abs_max() const;
  // Rows kept (row-major, rows() x channels()): a uniform sample of all rows seen
  // (reservoir sampling with a fixed seed, so runs repeat).
  const std::vector<float>& sample_rows() const { return rows_; }
  size_t rows() const { return channels_ ? rows_.size() / static_cast<size_t>(channels_) : 0; }
  uint64_t rows_seen() const { return rows_seen_; }
  const std::string& name() const { return name_; }

 private:
  void keep_row(const float* row);

  std::string name_;
  int64_t channels_;
  size_t max_rows_;
  std::vector<float> min_, max_, rows_;
  uint64_t rows_seen_ = 0;
  std::mt19937_64 rng_{0x5eed};
};

// How unevenly a tensor's channels are scaled: the largest channel abs-max over the median
// one (1 for a flat tensor; 0 when every channel is 0). LLM-style outlier channels give
// ratios in the tens; ordinary activations stay in the low single digits.
double outlier_ratio(const std::vector<float>& abs_max);

}  // namespace octet::quant
