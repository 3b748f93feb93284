#include "quant/default_mode.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <vector>

namespace octet::quant {
namespace {

bool is_token_input(const std::string& name, const Tensor& t) {
  return (name == "input_ids" || name == "decoder_input_ids") && t.rank() == 2 &&
         (t.dtype() == DType::Int64 || t.dtype() == DType::Int32);
}

// The second half of every row replaced by the first half's tokens in reverse order: valid
// ids (they occur in the sample), and the positions keep their count, so masks and
// position inputs stay as they are. False when no token changed (a constant sequence).
bool alter_second_half(Tensor& ids, int64_t half) {
  const int64_t rows = ids.shape()[0], len = ids.shape()[1];
  bool changed = false;
  auto alter = [&](auto* p) {
    for (int64_t r = 0; r < rows; ++r) {
      auto* row = p + r * len;
      for (int64_t j = half; j < len; ++j) {
        const auto v = row[(half - 1) - ((j - half) % half)];
        changed = changed || v != row[j];
        row[j] = v;
      }
    }
  };
  if (ids.dtype() == DType::Int64) alter(ids.mutable_data<int64_t>());
  else alter(ids.mutable_data<int32_t>());
  return changed;
}

// Largest |a - b| over positions [begin, end) of axis 1 of a [B, S, ...] tensor.
double max_difference(const std::vector<float>& a, const std::vector<float>& b, const std::vector<int64_t>& shape,
                      int64_t begin, int64_t end) {
  int64_t inner = 1;
  for (size_t i = 2; i < shape.size(); ++i) inner *= shape[i];
  double m = 0;
  for (int64_t r = 0; r < shape[0]; ++r)
    for (int64_t s = begin; s < end; ++s) {
      const size_t at = static_cast<size_t>((r * shape[1] + s) * inner);
      for (size_t i = 0; i < static_cast<size_t>(inner); ++i) m = std::max(m, std::fabs(double(a[at + i]) - b[at + i]));
    }
  return m;
}

// A sample with every position attended: a padded one would hide the changed tail behind
// its mask, and a bidirectional encoder would look causal (paraphrase-MiniLM's padded
// samples did).
NamedTensors unmasked(const NamedTensors& sample) {
  NamedTensors out;
  for (const auto& [name, t] : sample) {
    if (name != "attention_mask" || (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)) {
      out.emplace_back(name, t);
      continue;
    }
    Tensor ones = Tensor::uninitialized(t.dtype(), t.shape());
    if (t.dtype() == DType::Int64) std::fill_n(ones.mutable_data<int64_t>(), t.numel(), int64_t{1});
    else std::fill_n(ones.mutable_data<int32_t>(), t.numel(), int32_t{1});
    out.emplace_back(name, std::move(ones));
  }
  return out;
}

}  // namespace

std::optional<std::string> causal_decoder_evidence(const Session& float_model, const NamedTensors& padded) {
  const NamedTensors sample = unmasked(padded);
  NamedTensors altered;
  std::string ids_name;
  int64_t rows = 0, len = 0;
  for (const auto& [name, t] : sample) {
    if (ids_name.empty() && is_token_input(name, t) && t.shape()[1] >= 4) {
      ids_name = name;
      rows = t.shape()[0];
      len = t.shape()[1];
      Tensor copy = Tensor::uninitialized(t.dtype(), t.shape());
      std::copy(t.raw(), t.raw() + t.bytes(), copy.mutable_raw());
      altered.emplace_back(name, std::move(copy));
    } else {
      altered.emplace_back(name, t);
    }
  }
  if (ids_name.empty()) return std::nullopt;
  const int64_t half = len / 2;
  for (auto& [name, t] : altered)
    if (name == ids_name && !alter_second_half(t, half)) return std::nullopt;

  const NamedTensors before = float_model.run(sample), after = float_model.run(altered);
  std::string compared;
  double worst_prefix = 0;
  bool tail_changed = false;
  for (size_t i = 0; i < before.size(); ++i) {
    const Tensor& a = before[i].second;
    if (a.dtype() != DType::Float32 || a.rank() < 2 || a.shape()[0] != rows || a.shape()[1] != len) continue;
    const std::vector<float> x = a.to_float_vector(), y = after[i].second.to_float_vector();
    double scale = 0;
    for (float v : x) scale = std::max(scale, double(std::fabs(v)));
    // GEMMs over a different number of rows may block differently: float rounding only.
    const double tolerance = 1e-4 * std::max(scale, 1e-6);
    const double prefix = max_difference(x, y, a.shape(), 0, half);
    if (prefix > tolerance) return std::nullopt;  // an earlier position saw a later token
    worst_prefix = std::max(worst_prefix, prefix / std::max(scale, 1e-6));
    tail_changed = tail_changed || max_difference(x, y, a.shape(), half, len) > tolerance;
    compared += (compared.empty() ? "'" : ", '") + before[i].first + "'";
  }
  if (compared.empty() || !tail_changed) return std::nullopt;
  std::ostringstream why;
  why << "changing " << ids_name << " at positions " << half << ".." << len - 1 << " of a calibration sample left "
      << compared << " at positions 0.." << half - 1 << " unchanged (" << std::scientific << std::setprecision(1)
      << worst_prefix << " relative) and changed later ones: a causal decoder";
  return why.str();
}

namespace {

// A caller who named no mode got static for having samples; a decoder LLM gets per-token
// dynamic activations instead (default_mode.h says why), on the octet target, whose
// octet.QMatMul quantizes each row on the fly (ort's dynamic form has one scale per tensor).
void choose_default_mode(QuantizeJob& job, const std::function<Session()>& float_model, const CalibrationSource* source,
                         const std::vector<size_t>& calib_idx, QuantizeReport& report) {
  if (!job.mode_is_default || job.options.mode != Mode::Static || !source || calib_idx.empty()) return;
  if (job.options.target != Target::Octet) {
    report.mode_reason = "static: the default with calibration samples";
    return;
  }
  const std::optional<std::string> decoder =
      causal_decoder_evidence(float_model(), source->sample(calib_idx.front()));
  if (!decoder) {
    report.mode_reason = "static: the default with calibration samples (not a causal decoder)";
    return;
  }
  job.options.mode = Mode::Dynamic;
  job.options.per_token.clear();
  if (job.smoothing_is_default) job.smoothing.reset();  // static mode's default only
  report.mode_reason = "dynamic, per token: the default for decoder LLMs (" + *decoder +
                       "); the samples still round the weights (GPTQ) and measure fidelity; --mode static forces static";
}

}  // namespace

const std::set<std::string>& default_per_token() {
  static const std::set<std::string> ops = {"MatMul", "Gemm"};
  return ops;
}

void settle_default_mode(QuantizeJob& job, const std::function<Session()>& float_model, const CalibrationSource* source,
                         const std::vector<size_t>& calib_idx, QuantizeReport& report) {
  choose_default_mode(job, float_model, source, calib_idx, report);
  // Static mode on the octet target takes the default per-token linear inputs (issue 15).
  if (job.per_token_is_default && job.options.mode == Mode::Static && job.options.target == Target::Octet) {
    job.options.per_token = default_per_token();
    report.mode_reason += (report.mode_reason.empty() ? "static" : std::string()) +
                          "; the MatMul/Gemm inputs per token at run time, attention and Conv calibrated "
                          "(--per-token none: all calibrated)";
  }
}

}  // namespace octet::quant
