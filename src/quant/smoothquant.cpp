#include "quant/smoothquant.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "quant/quant_params.h"
#include "quant/smooth_search.h"
#include "runtime/session.h"

namespace octet::quant {

WeightView weight_view(const Graph& graph, const std::string& node_name) {
  const Node* node = nullptr;
  for (const Node* n : graph.nodes())
    if (n->name() == node_name) node = n;
  if (!node) fail("smoothing: node '", node_name, "' is not in the graph");
  const Value* b = node->input(1);
  if (!b || !b->constant() || b->constant()->dtype() != DType::Float32 || b->constant()->rank() != 2)
    fail("smoothing: ", node->describe(), " has no constant 2-D float weight");
  const Tensor& t = *b->constant();
  const bool transposed = node->op_type() == "Gemm" && node->attr_int("transB", 0) != 0;
  WeightView w;
  w.data = t.data<float>();
  w.transposed = transposed;
  w.k = transposed ? t.shape()[1] : t.shape()[0];
  w.n = transposed ? t.shape()[0] : t.shape()[1];
  return w;
}

std::vector<SmoothGroup> find_smooth_groups(const Graph& graph, const QuantizePlan& plan) {
  std::vector<SmoothGroup> groups;
  std::map<const Value*, size_t> index;
  for (const QuantizedNode& q : plan.nodes) {
    const Node* n = q.node;
    if (q.kind != QuantKind::Weight || !n->domain().empty()) continue;
    if (n->op_type() != "MatMul" && n->op_type() != "Gemm") continue;
    const Value* x = n->input(0);
    const WeightView w = weight_view(graph, n->name());
    if (x->type.dims && !x->type.dims->empty()) {
      const Dim& last = x->type.dims->back();
      if (last.is_constant() && last.value() != w.k) continue;  // not a plain [.., K] x [K, N] product
    }
    auto [it, fresh] = index.emplace(x, groups.size());
    if (fresh) groups.push_back({x->name(), {}, w.k, q.per_token});
    SmoothGroup& g = groups[it->second];
    g.per_token = g.per_token && q.per_token;
    if (g.channels != w.k) fail("smoothing: ", n->describe(), " reads '", x->name(), "' with K=", w.k, ", another reader has K=", g.channels);
    g.consumers.push_back(n->name());
  }
  return groups;
}

std::map<std::string, ChannelStatsObserver> observe_channels(const Session& session, const std::vector<SmoothGroup>& groups,
                                                         const CalibrationSource& source,
                                                         const std::vector<size_t>& samples, size_t keep_rows,
                                                         const ProgressFn& progress) {
  std::map<std::string, ChannelStatsObserver> stats;
  for (const SmoothGroup& g : groups) stats.emplace(g.activation, ChannelStatsObserver(g.activation, g.channels, keep_rows));
  size_t done = 0;
  for (size_t index : samples) {
    session.run(source.sample(index), [&](const Value& v, const Tensor& t) {
      if (auto it = stats.find(v.name()); it != stats.end()) it->second.observe(t);
    });
    if (progress) progress(++done, samples.size());
  }
  return stats;
}

std::map<std::string, ChannelStatsObserver> observe_channels(std::shared_ptr<const Graph> graph,
                                                             const std::vector<SmoothGroup>& groups,
                                                             const CalibrationSource& source,
                                                             const std::vector<size_t>& samples, size_t keep_rows,
                                                             const ProgressFn& progress) {
  return observe_channels(Session(std::move(graph)), groups, source, samples, keep_rows, progress);
}

std::map<std::string, ChannelStatsObserver> observe_channels(std::shared_ptr<Graph> graph,
                                                             const std::vector<SmoothGroup>& groups,
                                                             const CalibrationSource& source,
                                                             const std::vector<size_t>& samples, size_t keep_rows,
                                                             const ProgressFn& progress) {
  return observe_channels(Session(std::move(graph)), groups, source, samples, keep_rows, progress);
}

std::vector<float> smoothing_scales(const std::vector<float>& act_abs_max, const std::vector<float>& weight_abs_max,
                                    double alpha) {
  if (act_abs_max.size() != weight_abs_max.size())
    fail("smoothing: ", act_abs_max.size(), " activation channels but ", weight_abs_max.size(), " weight rows");
  if (!(alpha >= 0 && alpha <= 1)) fail("smoothing: alpha ", alpha, " is outside [0, 1]");
  std::vector<float> s(act_abs_max.size(), 1.0f);
  for (size_t j = 0; j < s.size(); ++j) {
    const double a = act_abs_max[j], w = weight_abs_max[j];
    if (a <= 0 || w <= 0) continue;
    s[j] = static_cast<float>(std::clamp(std::pow(a, alpha) / std::pow(w, 1 - alpha), 1e-5, 1e5));
  }
  return s;
}

std::vector<float> weight_abs_max(const Graph& graph, const SmoothGroup& group) {
  std::vector<float> m(static_cast<size_t>(group.channels), 0.0f);
  for (const std::string& name : group.consumers) {
    const WeightView w = weight_view(graph, name);
    for (int64_t j = 0; j < w.k; ++j)
      for (int64_t c = 0; c < w.n; ++c) m[static_cast<size_t>(j)] = std::max(m[static_cast<size_t>(j)], std::fabs(w.at(j, c)));
  }
  return m;
}

double smoothing_error(const Graph& graph, const SmoothGroup& group, const ChannelStatsObserver& stats,
                       const std::vector<float>& scale, const QuantizeOptions& options) {
  return SmoothingSearch(graph, group, stats, options).error(scale);
}

std::optional<SmoothingRequest> parse_smoothing(const std::string& setting, Mode mode, double min_outlier_ratio,
                                                const std::string& option_name) {
  const std::string chosen = setting.empty() && mode == Mode::Static ? "auto" : setting;
  if (chosen.empty() || chosen == "off") return std::nullopt;
  SmoothingRequest r;
  if (chosen != "auto") {
    char* end = nullptr;
    const double a = std::strtod(chosen.c_str(), &end);
    if (end == chosen.c_str() || *end || !(a >= 0 && a <= 1))
      fail(option_name, " must be 'auto', 'off' or an alpha in [0, 1], got '", chosen, "'");
    r.alpha = a;
  }
  if (!(min_outlier_ratio >= 0)) fail("the smoothing outlier ratio must be >= 0, got ", min_outlier_ratio);
  r.min_outlier_ratio = min_outlier_ratio;
  return r;
}

std::vector<SmoothingDecision> decide_smoothing(const Graph& graph, const std::vector<SmoothGroup>& groups,
                                                const std::map<std::string, ChannelStatsObserver>& stats,
                                                const SmoothingRequest& request, const QuantizeOptions& options) {
  std::vector<SmoothingDecision> out;
  for (const SmoothGroup& g : groups) {
    const ChannelStatsObserver& st = stats.at(g.activation);
    SmoothingDecision d;
    d.group = g;
    const std::vector<float> act = st.abs_max();
    d.act_min = *std::min_element(st.min().begin(), st.min().end());
    d.act_max = *std::max_element(st.max().begin(), st.max().end());
    d.outlier_ratio = outlier_ratio(act);
    const SmoothingSearch search(graph, g, st, options);
    const bool have_rows = st.rows() > 0;
    if (have_rows) d.error_plain = search.error({});
    if (d.outlier_ratio < request.min_outlier_ratio) {
      d.reason = "outlier ratio below " + std::to_string(request.min_outlier_ratio);
      out.push_back(std::move(d));
      continue;
    }
    const std::vector<float> wmax = weight_abs_max(graph, g);
    if (request.alpha) {
      d.smoothed = true;
      d.alpha = *request.alpha;
      d.scale = smoothing_scales(act, wmax, d.alpha);
      d.reason = "fixed alpha";
      if (have_rows) d.error_smoothed = search.error(d.scale);
    } else {
      if (!have_rows) fail("smoothing: --smoothquant auto needs kept rows for '", g.activation, "'");
      double best = *d.error_plain;
      for (int step = 0; step <= 10; ++step) {
        const double alpha = step / 10.0;
        std::vector<float> s = smoothing_scales(act, wmax, alpha);
        const double e = search.error(s);
        if (e < best) best = e, d.smoothed = true, d.alpha = alpha, d.scale = std::move(s);
      }
      d.reason = d.smoothed ? "auto: least error on the grid 0.0..1.0" : "auto: no alpha beat leaving it unsmoothed";
      if (d.smoothed) d.error_smoothed = best;
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace octet::quant
