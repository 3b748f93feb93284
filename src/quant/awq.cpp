#include "quant/awq.h"

#include <dnnl.h>

#include <algorithm>
#include <cmath>

#include "octet/error.h"
#include "quant/block_quant.h"

namespace octet::quant {
namespace {

// [rows, K] x [K, N] through oneDNN's threaded sgemm (the search evaluates 11 products per
// matmul; scalar loops would take minutes on a 135M model).
std::vector<float> product(const std::vector<float>& x, const float* w, int64_t rows, int64_t k, int64_t n) {
  std::vector<float> y(static_cast<size_t>(rows * n));
  if (dnnl_sgemm('N', 'N', rows, n, k, 1.0f, x.data(), k, w, n, 0.0f, y.data(), n) != dnnl_success)
    fail("awq: oneDNN sgemm failed on a [", rows, ", ", k, "] x [", k, ", ", n, "] product");
  return y;
}

const Node* find_node(const Graph& g, const std::string& name) {
  for (const Node* n : g.nodes())
    if (n->name() == name) return n;
  return nullptr;
}

struct Reader {
  const float* w = nullptr;  // [K, N]
  int64_t n = 0;
  std::vector<float> reference;  // X . W on the kept rows
};

// Squared output error of the readers with weights s * W block-quantized and X / s.
double error_with(const std::vector<Reader>& readers, const std::vector<float>& x, int64_t rows, int64_t k,
                  const std::vector<float>& s, const AwqSearch& a) {
  double err = 0;
  std::vector<float> eff;
  for (const Reader& r : readers) {
    const BlockQuantized q = quantize_blocks_rtn(r.w, k, r.n, a.bits, a.block, a.symmetric, s.data());
    eff.resize(static_cast<size_t>(k * r.n));
    for (int64_t j = 0; j < k; ++j)
      for (int64_t c = 0; c < r.n; ++c) eff[j * r.n + c] = dequantized(q, j, c) / s[j];
    const std::vector<float> y = product(x, eff.data(), rows, k, r.n);
    for (size_t i = 0; i < y.size(); ++i) {
      const double d = static_cast<double>(y[i]) - r.reference[i];
      err += d * d;
    }
  }
  return err;
}

}  // namespace

std::vector<SmoothingDecision> search_awq_scales(const Graph& graph, const std::vector<SmoothGroup>& groups,
                                                 const std::map<std::string, ChannelStatsObserver>& stats,
                                                 const AwqSearch& search) {
  std::vector<SmoothingDecision> out;
  for (const SmoothGroup& g : groups) {
    auto st = stats.find(g.activation);
    if (st == stats.end() || st->second.rows() == 0) continue;
    const int64_t k = g.channels, rows = static_cast<int64_t>(st->second.rows());
    const std::vector<float>& x = st->second.sample_rows();
    std::vector<Reader> readers;
    bool plain = true;
    for (const std::string& name : g.consumers) {
      const Node* n = find_node(graph, name);
      const Value* b = n ? n->input(1) : nullptr;
      if (!n || n->op_type() != "MatMul" || !b || !b->constant() || b->constant()->dtype() != DType::Float32 ||
          b->constant()->rank() != 2 || b->constant()->shape()[0] != k) {
        plain = false;
        break;
      }
      Reader r;
      r.w = b->constant()->data<float>();
      r.n = b->constant()->shape()[1];
      r.reference = product(x, r.w, rows, k, r.n);
      readers.push_back(std::move(r));
    }
    if (!plain || readers.empty()) continue;

    std::vector<double> mean_abs(static_cast<size_t>(k), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < k; ++j) mean_abs[j] += std::fabs(x[r * k + j]);
    SmoothingDecision d;
    d.group = g;
    double best = -1, best_alpha = 0;
    std::vector<float> best_scale;
    for (int step = 0; step <= 10; ++step) {
      const double alpha = step / 10.0;
      std::vector<float> s(static_cast<size_t>(k));
      float lo = INFINITY, hi = 0;
      for (int64_t j = 0; j < k; ++j) {
        s[j] = static_cast<float>(std::pow(std::max(mean_abs[j] / rows, 1e-6), alpha));
        lo = std::min(lo, s[j]), hi = std::max(hi, s[j]);
      }
      const float norm = std::sqrt(lo * hi);
      for (float& v : s) v = std::clamp(v / norm, 1e-4f, 1e4f);
      const double err = error_with(readers, x, rows, k, s, search);
      if (step == 0) d.error_plain = err;
      if (best < 0 || err < best) best = err, best_alpha = alpha, best_scale = s;
    }
    d.smoothed = best_alpha > 0;
    d.alpha = best_alpha;
    d.error_smoothed = best;
    d.reason = d.smoothed ? "AWQ: alpha " + std::to_string(best_alpha).substr(0, 3) + " lowest output error"
                          : "AWQ: no scaling beat plain rounding";
    if (d.smoothed) d.scale = std::move(best_scale);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace octet::quant
