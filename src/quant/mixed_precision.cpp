#include "quant/mixed_precision.h"

#include <algorithm>
#include <cstdio>

#include "octet/error.h"

namespace octet::quant {
namespace {

std::string fixed(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

const char* metric_name(Metric m) {
  switch (m) {
    case Metric::Cosine: return "cosine";
    case Metric::Top1: return "top1";
    case Metric::Mse: return "mse";
  }
  return "?";
}

Metric parse_metric(const std::string& s) {
  if (s == "cosine") return Metric::Cosine;
  if (s == "top1") return Metric::Top1;
  if (s == "mse") return Metric::Mse;
  fail("unknown --metric '", s, "' (expected cosine, top1 or mse)");
}

double metric_drop(const std::vector<OutputFidelity>& fidelity, Metric metric) {
  if (fidelity.empty()) fail("mixed precision: the model has no float32 output to measure");
  double drop = 0;
  bool any = false;
  for (const OutputFidelity& f : fidelity) {
    switch (metric) {
      case Metric::Cosine: drop = std::max(drop, 1 - f.cosine), any = true; break;
      case Metric::Top1:
        if (f.top1_agreement) drop = std::max(drop, 1 - *f.top1_agreement), any = true;
        break;
      case Metric::Mse: drop = std::max(drop, f.mse), any = true; break;
    }
  }
  if (!any) fail("--metric top1 needs an output named like logits (rank >= 2, last dim >= 2); this model has none");
  return drop;
}

MixedPrecisionResult search_mixed_precision(const std::vector<std::string>& layers, const DropFn& drop,
                                            double max_drop, const std::function<void(size_t, size_t)>& progress) {
  MixedPrecisionResult r;
  size_t estimate = 1 + layers.size() + 8;
  auto eval = [&](const std::set<std::string>& float_layers) {
    const double d = drop(float_layers);
    ++r.evaluations;
    estimate = std::max(estimate, r.evaluations + 1);
    if (progress) progress(r.evaluations, estimate);
    return d;
  };
  r.drop_all_int8 = r.final_drop = eval({});
  if (r.drop_all_int8 <= max_drop || layers.empty()) {
    r.met = r.drop_all_int8 <= max_drop;
    return r;
  }
  const std::set<std::string> all(layers.begin(), layers.end());
  for (const std::string& l : layers) {
    std::set<std::string> others = all;
    others.erase(l);
    r.ranking.push_back({l, eval(others), ""});
  }
  std::stable_sort(r.ranking.begin(), r.ranking.end(),
                   [](const FloatLayer& a, const FloatLayer& b) { return a.drop_alone > b.drop_alone; });
  auto prefix = [&](size_t k) {
    std::set<std::string> s;
    for (size_t i = 0; i < k; ++i) s.insert(r.ranking[i].node);
    return s;
  };
  // Smallest k whose top-k prefix meets the target; all float (k = n) meets it by definition.
  size_t lo = 1, hi = r.ranking.size();
  double hi_drop = 0;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    const double d = eval(prefix(mid));
    if (d <= max_drop) hi = mid, hi_drop = d;
    else lo = mid + 1;
  }
  std::set<std::string> kept = prefix(hi);
  r.final_drop = hi == r.ranking.size() && hi_drop == 0 ? eval(kept) : hi_drop;
  for (size_t i = hi; i-- > 0;) {
    std::set<std::string> fewer = kept;
    fewer.erase(r.ranking[i].node);
    const double d = eval(fewer);
    if (d <= max_drop) kept = std::move(fewer), r.final_drop = d;
  }
  r.met = r.final_drop <= max_drop;
  for (const FloatLayer& l : r.ranking)
    if (kept.count(l.node))
      r.float_layers.push_back({l.node, l.drop_alone,
                                "mixed precision: quantized alone it costs " + fixed(l.drop_alone) +
                                    " of the metric, and no smaller float set met the target without it"});
  return r;
}

}  // namespace octet::quant
