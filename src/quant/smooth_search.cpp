#include "quant/smooth_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <oneapi/dnnl/dnnl.h>

#include "quant/quant_params.h"

namespace octet::quant {
namespace {

// Output columns per block: a block's quantized weights (K x 256 floats, 1.5 MiB at
// K = 1536) stay in a core's cache next to its product.
constexpr int64_t kBlock = 256;

// C[rows, n] = A[rows, k] x B, B read from `b` with leading dimension ldb, transposed when
// `trans_b` (B stored [n, k]). Inside a parallel region oneDNN runs it on the calling thread.
void sgemm(const float* a, const float* b, float* c, int64_t rows, int64_t k, int64_t n, int64_t ldb, bool trans_b) {
  if (dnnl_sgemm('N', trans_b ? 'T' : 'N', rows, n, k, 1.0f, a, k, b, ldb, 0.0f, c, n) != dnnl_success)
    fail("smoothing: oneDNN sgemm failed on a [", rows, ", ", k, "] x [", k, ", ", n, "] product");
}

bool finite_row(const float* row, int64_t k) {
  for (int64_t j = 0; j < k; ++j)
    if (!std::isfinite(row[j])) return false;
  return true;
}

float round_to_grid(float v, float scale, float lo, float hi) { return std::clamp(std::nearbyint(v / scale), lo, hi) * scale; }

}  // namespace

SmoothingSearch::SmoothingSearch(const Graph& graph, const SmoothGroup& group, const ChannelStatsObserver& stats,
                                 const QuantizeOptions& options)
    : stats_(stats), options_(options), per_token_(group.per_token), k_(group.channels) {
  for (size_t r = 0; r < stats.rows(); ++r) {
    const float* row = stats.sample_rows().data() + r * static_cast<size_t>(k_);
    if (finite_row(row, k_)) x_.insert(x_.end(), row, row + k_);
  }
  rows_ = static_cast<int64_t>(x_.size()) / std::max<int64_t>(k_, 1);
  for (const std::string& name : group.consumers) {
    const WeightView v = weight_view(graph, name);
    Weight w{v.data, v.n, v.transposed, {}};
    if (rows_) {
      w.exact.resize(static_cast<size_t>(rows_ * w.n));
      sgemm(x_.data(), w.data, w.exact.data(), rows_, k_, w.n, w.transposed ? k_ : w.n, w.transposed);
    }
    weights_.push_back(std::move(w));
  }
}

double SmoothingSearch::error(const std::vector<float>& scale) const {
  if (rows_ == 0) return 0;
  const size_t k = static_cast<size_t>(k_);
  const std::vector<float> s = scale.empty() ? std::vector<float>(k, 1.0f) : scale;
  if (s.size() != k) fail("smoothing: ", s.size(), " scales for ", k, " channels");
  const std::vector<float> xq = quantized_input(s);
  if (xq.empty()) return 0;
  double error = 0;
  for (const Weight& w : weights_) error += weight_error(w, s, xq);
  return error;
}

std::vector<float> SmoothingSearch::quantized_input(const std::vector<float>& s) const {
  const size_t k = static_cast<size_t>(k_);
  const bool int8 = options_.activation_type == DType::Int8;
  std::vector<float> xq(x_.size());
  if (per_token_) {
    // Each row on its own grid, the rule of octet.QMatMul's dynamic rows (ref_octet_quant.cpp).
    for (size_t r = 0; r < static_cast<size_t>(rows_); ++r) {
      float* out = xq.data() + r * k;
      const float* x = x_.data() + r * k;
      for (size_t j = 0; j < k; ++j) out[j] = x[j] / s[j];
      const Range row = per_token_row_range(out, k);
      float scale = per_token_row_span(row, options_.activation_type) / (int8 ? 127.0f : 255.0f);
      if (scale == 0) scale = 1;
      const float zp = int8 ? 0.0f : std::clamp(std::nearbyint(-row.lo / scale), 0.0f, 255.0f);
      const float qmin = int8 ? -128.0f : 0.0f, qmax = int8 ? 127.0f : 255.0f;
      for (size_t j = 0; j < k; ++j) out[j] = (std::clamp(std::nearbyint(out[j] / scale) + zp, qmin, qmax) - zp) * scale;
    }
    return xq;
  }
  // X / s over all samples lies in [min_j min_j / s_j, max_j max_j / s_j] (s > 0).
  Range range{std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  for (size_t j = 0; j < k; ++j) {
    if (stats_.min()[j] > stats_.max()[j]) continue;
    range.lo = std::min(range.lo, stats_.min()[j] / s[j]);
    range.hi = std::max(range.hi, stats_.max()[j] / s[j]);
  }
  if (range.lo > range.hi) return {};
  const QuantParams ap = activation_params(range, options_.activation_type);
  const float amin = ap.dtype == DType::UInt8 ? 0.0f : -127.0f, amax = ap.dtype == DType::UInt8 ? 255.0f : 127.0f;
  const float zp = static_cast<float>(ap.zero_point);
  for (size_t i = 0; i < x_.size(); ++i) {
    const float q = std::nearbyint(x_[i] / s[i % k] / ap.scale) + zp;
    xq[i] = (std::clamp(q, amin, amax) - zp) * ap.scale;
  }
  return xq;
}

double SmoothingSearch::weight_error(const Weight& w, const std::vector<float>& s, const std::vector<float>& xq) const {
  const int64_t k = k_, n = w.n, rows = rows_;
  auto at = [&](int64_t j, int64_t c) { return w.transposed ? w.data[c * k + j] : w.data[j * n + c]; };
  // Per tensor: one scale for all of s * W, found before the blocks.
  float tensor_scale = 0;
  if (!options_.per_channel_weights) {
    float m = 0;
    for (int64_t j = 0; j < k; ++j)
      for (int64_t c = 0; c < n; ++c) m = std::max(m, std::fabs(s[static_cast<size_t>(j)] * at(j, c)));
    tensor_scale = symmetric_int8_scale(m);
  }
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> block_error(static_cast<size_t>(blocks), 0.0);  // summed in order: the same result on any thread count
#pragma omp parallel
  {
    std::vector<float> wq(static_cast<size_t>(k * kBlock)), scales(static_cast<size_t>(kBlock)), approx(static_cast<size_t>(rows * kBlock));
#pragma omp for schedule(dynamic)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t c0 = b * kBlock, width = std::min(kBlock, n - c0);
      // s * W for this block's columns as [K, width], then each column's scale.
      for (int64_t j = 0; j < k; ++j)
        for (int64_t c = 0; c < width; ++c) wq[static_cast<size_t>(j * width + c)] = s[static_cast<size_t>(j)] * at(j, c0 + c);
      if (options_.per_channel_weights) {
        std::fill(scales.begin(), scales.end(), 0.0f);
        for (int64_t j = 0; j < k; ++j)
          for (int64_t c = 0; c < width; ++c)
            scales[static_cast<size_t>(c)] = std::max(scales[static_cast<size_t>(c)], std::fabs(wq[static_cast<size_t>(j * width + c)]));
        for (int64_t c = 0; c < width; ++c) scales[static_cast<size_t>(c)] = symmetric_int8_scale(scales[static_cast<size_t>(c)]);
      } else {
        std::fill(scales.begin(), scales.end(), tensor_scale);
      }
      for (int64_t j = 0; j < k; ++j)
        for (int64_t c = 0; c < width; ++c) {
          float& v = wq[static_cast<size_t>(j * width + c)];
          v = round_to_grid(v, scales[static_cast<size_t>(c)], -127.0f, 127.0f);
        }
      sgemm(xq.data(), wq.data(), approx.data(), rows, k, width, width, false);
      double e = 0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < width; ++c) {
          const double d = static_cast<double>(approx[static_cast<size_t>(r * width + c)]) - w.exact[static_cast<size_t>(r * n + c0 + c)];
          e += d * d;
        }
      block_error[static_cast<size_t>(b)] = e;
    }
  }
  double total = 0;
  for (double e : block_error) total += e;
  return total;
}

}  // namespace octet::quant
