#include "quant/calibrate.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include "quant/observers.h"
#include "quant/quant_params.h"
#include "quant/ranges.h"

namespace octet::quant {
namespace {

// One tensor's statistics: min/max is all minmax needs; the other methods need the
// histogram (which also keeps the exact min and max).
struct TensorStats {
  std::optional<MinMaxObserver> minmax;
  std::optional<HistogramObserver> histogram;
  // With a histogram: each last-axis channel's finite [min, max], so the clipping methods
  // can leave outlier channels whole (keep_outlier_channels); empty when the tensor has no
  // stable last axis (rank 0, or a last dim that changes between samples).
  std::vector<float> channel_min, channel_max;
  bool channels_usable = true;
  // With a histogram: each observation's finite min and max (keep_recurring_extremes).
  std::vector<float> sample_min, sample_max;

  void observe(const Tensor& t) {
    const float* x = t.data<float>();
    const size_t n = static_cast<size_t>(t.numel());
    if (minmax) return minmax->observe(x, n);
    histogram->observe(x, n);
    observe_channels(t);
    observe_extremes(x, n);
  }
  void observe_extremes(const float* x, size_t n) {
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    for (size_t i = 0; i < n; ++i)
      if (std::isfinite(x[i])) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
    if (lo <= hi) sample_min.push_back(lo), sample_max.push_back(hi);
  }
  void observe_channels(const Tensor& t) {
    if (!channels_usable || t.numel() == 0) return;
    const size_t k = t.rank() ? static_cast<size_t>(t.shape().back()) : 0;
    if (k < 2 || (!channel_min.empty() && channel_min.size() != k)) {
      channels_usable = false;
      channel_min.clear(), channel_max.clear();
      return;
    }
    if (channel_min.empty()) {
      channel_min.assign(k, std::numeric_limits<float>::infinity());
      channel_max.assign(k, -std::numeric_limits<float>::infinity());
    }
    const float* x = t.data<float>();
    for (size_t i = 0, n = static_cast<size_t>(t.numel()); i < n; i += k)
      for (size_t j = 0; j < k; ++j)
        if (std::isfinite(x[i + j])) channel_min[j] = std::min(channel_min[j], x[i + j]), channel_max[j] = std::max(channel_max[j], x[i + j]);
  }
  float min() const { return minmax ? minmax->min() : histogram->min(); }
  float max() const { return minmax ? minmax->max() : histogram->max(); }
  uint64_t count() const { return minmax ? minmax->count() : histogram->count(); }
};

Range clipped_range(const TensorStats& s, const QuantizeOptions& o) {
  switch (o.calibration) {
    case Calibration::MinMax: return minmax_range(*s.minmax);
    case Calibration::Percentile: return percentile_range(*s.histogram, o.percentile);
    case Calibration::Entropy: return entropy_range(*s.histogram, 256);
    case Calibration::Mse: return mse_range(*s.histogram, 256, o.activation_type == DType::Int8);
  }
  return minmax_range(*s.minmax);
}

// `c` quantized over `r`.
void use_range(CalibratedTensor& c, Range r, const QuantizeOptions& options) {
  c.lo = r.lo;
  c.hi = r.hi;
  const QuantParams p = activation_params(r, options.activation_type);
  c.params = {p.scale, p.zero_point, p.dtype};
}

// The method's range, never clipping an outlier channel nor a magnitude most samples
// reach (keep_outlier_channels, keep_recurring_extremes).
Range choose_range(const TensorStats& s, const QuantizeOptions& o) {
  const Range r = clipped_range(s, o);
  if (s.minmax) return r;
  return keep_recurring_extremes(keep_outlier_channels(r, s.channel_min, s.channel_max), s.sample_min, s.sample_max);
}

}  // namespace

ActivationTable CalibrationResult::table() const {
  ActivationTable t;
  for (const auto& [name, c] : tensors) t[name] = c.params;
  return t;
}

CalibrationResult calibrate(std::shared_ptr<const Graph> graph, const std::vector<std::string>& tensors,
                            const CalibrationSource& source, const std::vector<size_t>& samples,
                            const QuantizeOptions& options, const ProgressFn& progress) {
  return calibrate(Session(std::move(graph)), tensors, source, samples, options, progress);
}

CalibrationResult calibrate(const Session& session, const std::vector<std::string>& tensors,
                            const CalibrationSource& source, const std::vector<size_t>& samples,
                            const QuantizeOptions& options, const ProgressFn& progress, const ValueObserver& also) {
  if (samples.empty()) fail("calibration needs at least one sample; ", source.describe(), " gave none");
  std::map<std::string, TensorStats> stats;
  for (const std::string& name : tensors) {
    TensorStats& s = stats[name];
    if (options.calibration == Calibration::MinMax) s.minmax.emplace(name);
    else s.histogram.emplace(name);
  }
  size_t done = 0;
  for (size_t index : samples) {
    session.run(source.sample(index), [&](const Value& v, const Tensor& t) {
      if (also) also(v, t);
      auto it = stats.find(v.name());
      if (it == stats.end()) return;
      if (t.dtype() != DType::Float32) fail("calibration: tensor '", v.name(), "' is ", dtype_name(t.dtype()), ", not float32");
      it->second.observe(t);
    });
    if (progress) progress(++done, samples.size());
  }
  CalibrationResult result;
  result.samples = samples.size();
  for (const auto& [name, s] : stats) {
    if (s.count() == 0)
      fail("calibration: tensor '", name, "' never held a finite value over ", samples.size(),
           " samples (is it computed for these inputs?)");
    CalibratedTensor c;
    c.min = s.min();
    c.max = s.max();
    use_range(c, choose_range(s, options), options);
    result.tensors[name] = c;
  }
  return result;
}

void keep_observed_range(CalibrationResult& result, const std::set<std::string>& names, const QuantizeOptions& options) {
  for (const std::string& name : names) {
    auto it = result.tensors.find(name);
    if (it == result.tensors.end()) continue;
    use_range(it->second, Range{it->second.min, it->second.max}, options);
  }
}

ProgressFn stderr_progress(const std::string& label) {
  const bool tty = isatty(fileno(stderr));
  return [label, tty, last_decile = -1](size_t done, size_t total) mutable {
    const int width = 30;
    const int filled = total ? static_cast<int>(width * done / total) : width;
    if (tty) {
      std::fprintf(stderr, "\r%s [%s%s] %zu/%zu", label.c_str(), std::string(static_cast<size_t>(filled), '=').c_str(),
                   std::string(static_cast<size_t>(width - filled), ' ').c_str(), done, total);
      if (done == total) std::fputc('\n', stderr);
    } else {
      const int decile = total ? static_cast<int>(10 * done / total) : 10;
      if (decile == last_decile && done != total) return;
      last_decile = decile;
      std::fprintf(stderr, "%s %zu/%zu\n", label.c_str(), done, total);
    }
    std::fflush(stderr);
  };
}

}  // namespace octet::quant
