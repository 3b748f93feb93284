#include "quant/evaluate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>

namespace octet::quant {
namespace {

bool is_float32(const Tensor& t) { return t.dtype() == DType::Float32; }

bool named_like_logits(const std::string& name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("logit") != std::string::npos;
}

struct ErrorSums {
  double signal = 0, noise = 0;
};

struct FidelitySums {
  double dot = 0, norm_a = 0, norm_b = 0, max_abs = 0, sq_err = 0;
  size_t values = 0, rows = 0, rows_agree = 0, samples = 0;
  bool top1 = false;
};

void accumulate(FidelitySums& f, const Tensor& a, const Tensor& b, bool top1) {
  if (a.shape() != b.shape())
    fail("quantized output has shape ", shape_to_string(b.shape()), ", float has ", shape_to_string(a.shape()));
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  const int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) {
    f.dot += static_cast<double>(x[i]) * y[i];
    f.norm_a += static_cast<double>(x[i]) * x[i];
    f.norm_b += static_cast<double>(y[i]) * y[i];
    f.max_abs = std::max(f.max_abs, static_cast<double>(std::fabs(x[i] - y[i])));
    f.sq_err += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
  }
  f.values += static_cast<size_t>(n);
  ++f.samples;
  if (!top1 || a.rank() < 2 || a.shape().back() < 2) return;
  f.top1 = true;
  const int64_t width = a.shape().back();
  for (int64_t r = 0; r < n / width; ++r) {
    const float* xr = x + r * width;
    const float* yr = y + r * width;
    f.rows_agree += (std::max_element(xr, xr + width) - xr) == (std::max_element(yr, yr + width) - yr);
    ++f.rows;
  }
}

}  // namespace

std::map<std::string, double> layer_sqnr(const Session& float_model, const Session& quantized_model,
                                         const std::vector<std::pair<std::string, std::string>>& pairs,
                                         const CalibrationSource& source, const std::vector<size_t>& samples) {
  std::map<std::string, std::string> float_of;  // quantized name -> float name
  std::set<std::string> float_names;
  std::map<std::string, Tensor> reference;      // this sample's float values
  std::map<std::string, ErrorSums> sums;
  for (const auto& [f, q] : pairs) float_of[q] = f, float_names.insert(f);
  for (size_t index : samples) {
    const NamedTensors inputs = source.sample(index);
    reference.clear();
    float_model.run(inputs, [&](const Value& v, const Tensor& t) {
      if (is_float32(t) && float_names.count(v.name()))
        reference[v.name()] = t.deep_copy();
    });
    quantized_model.run(inputs, [&](const Value& v, const Tensor& t) {
      auto f = float_of.find(v.name());
      if (f == float_of.end() || !is_float32(t)) return;
      auto r = reference.find(f->second);
      if (r == reference.end() || r->second.shape() != t.shape()) return;
      const float* y = r->second.data<float>();
      const float* yq = t.data<float>();
      ErrorSums& s = sums[f->second];
      for (int64_t i = 0; i < t.numel(); ++i) {
        s.signal += static_cast<double>(y[i]) * y[i];
        s.noise += static_cast<double>(y[i] - yq[i]) * (y[i] - yq[i]);
      }
    });
  }
  std::map<std::string, double> db;
  for (const auto& [name, s] : sums)
    db[name] = s.noise > 0 ? 10 * std::log10(s.signal / s.noise) : std::numeric_limits<double>::infinity();
  return db;
}

std::vector<OutputFidelity> output_fidelity(const Session& float_model, const Session& quantized_model,
                                            const CalibrationSource& source, const std::vector<size_t>& samples) {
  std::vector<FidelitySums> sums;
  std::vector<std::string> names;
  for (size_t index : samples) {
    const NamedTensors inputs = source.sample(index);
    const NamedTensors a = float_model.run(inputs);
    const NamedTensors b = quantized_model.run(inputs);
    if (sums.empty()) sums.resize(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      if (!is_float32(a[i].second)) continue;
      auto match = std::find_if(b.begin(), b.end(), [&](const auto& o) { return o.first == a[i].first; });
      if (match == b.end()) fail("the quantized model has no output '", a[i].first, "'");
      if (!is_float32(match->second)) fail("quantized output '", a[i].first, "' is not float32");
      accumulate(sums[i], a[i].second, match->second, named_like_logits(a[i].first));
    }
    if (names.empty())
      for (const auto& o : a) names.push_back(o.first);
  }
  std::vector<OutputFidelity> out;
  for (size_t i = 0; i < sums.size(); ++i) {
    const FidelitySums& s = sums[i];
    if (!s.samples) continue;
    OutputFidelity f;
    f.name = names[i];
    const double denom = std::sqrt(s.norm_a) * std::sqrt(s.norm_b);
    f.cosine = denom > 0 ? s.dot / denom : (s.norm_a == s.norm_b ? 1.0 : 0.0);
    f.max_abs_error = s.max_abs;
    f.mse = s.values ? s.sq_err / static_cast<double>(s.values) : 0;
    f.samples = s.samples;
    if (s.top1 && s.rows) f.top1_agreement = static_cast<double>(s.rows_agree) / static_cast<double>(s.rows);
    out.push_back(f);
  }
  return out;
}

double max_relative_error(const Session& reference, const Session& other, const CalibrationSource& source,
                          const std::vector<size_t>& samples) {
  std::vector<NamedTensors> outputs;
  for (size_t index : samples) outputs.push_back(reference.run(source.sample(index)));
  return max_relative_error(outputs, other, source, samples);
}

double max_relative_error(const std::vector<NamedTensors>& reference, const Session& other,
                          const CalibrationSource& source, const std::vector<size_t>& samples) {
  if (reference.size() != samples.size()) fail("max_relative_error: ", reference.size(), " reference runs for ", samples.size(), " samples");
  double worst = 0;
  for (size_t s = 0; s < samples.size(); ++s) {
    const NamedTensors& a = reference[s];
    const NamedTensors b = other.run(source.sample(samples[s]));
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (!is_float32(a[i].second) || !is_float32(b[i].second)) continue;
      if (a[i].second.shape() != b[i].second.shape()) fail("output '", a[i].first, "' changed shape");
      const float* x = a[i].second.data<float>();
      const float* y = b[i].second.data<float>();
      double diff = 0, scale = 0;
      for (int64_t k = 0; k < a[i].second.numel(); ++k) {
        const double d = std::fabs(static_cast<double>(x[k]) - y[k]);
        if (std::isnan(d)) return std::numeric_limits<double>::infinity();
        diff = std::max(diff, d);
        scale = std::max(scale, static_cast<double>(std::fabs(x[k])));
      }
      worst = std::max(worst, scale > 0 ? diff / scale : diff);
    }
  }
  return worst;
}

}  // namespace octet::quant
