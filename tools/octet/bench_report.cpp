#include "bench_report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <numeric>
#include <sstream>

#include "analysis/macs.h"
#include "octet/error.h"

namespace octet::cli {

using nlohmann::json;

namespace {

double percentile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

std::string fixed(double v, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << v;
  return out.str();
}

// Latencies of tiny models are fractions of a millisecond: keep three significant digits.
std::string ms(double v) { return fixed(v, v < 1 ? 3 : v < 100 ? 2 : 1) + " ms"; }

}  // namespace

LatencyStats latency_stats(std::vector<double> samples) {
  OCTET_ASSERT(!samples.empty(), "latency_stats of no samples");
  std::sort(samples.begin(), samples.end());
  LatencyStats s;
  s.p50 = percentile(samples, 0.5);
  s.p90 = percentile(samples, 0.9);
  s.min = samples.front();
  s.max = samples.back();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  double var = 0;
  for (double x : samples) var += (x - s.mean) * (x - s.mean);
  s.stddev = samples.size() > 1 ? std::sqrt(var / static_cast<double>(samples.size() - 1)) : 0.0;
  return s;
}

void add_latency_fields(json& report, const std::vector<double>& samples_ms, int64_t tokens_per_run) {
  const LatencyStats s = latency_stats(samples_ms);
  report["p50_ms"] = s.p50;
  report["p90_ms"] = s.p90;
  report["mean_ms"] = s.mean;
  report["min_ms"] = s.min;
  report["max_ms"] = s.max;
  report["stddev_ms"] = s.stddev;
  report["samples_ms"] = samples_ms;
  // Throughput of back-to-back single-stream runs: what one caller gets.
  const double per_s = s.mean > 0 ? 1000.0 / s.mean : 0.0;
  report["throughput_per_s"] = per_s;
  if (tokens_per_run > 0) {
    report["tokens_per_run"] = tokens_per_run;
    report["tokens_per_s"] = per_s * static_cast<double>(tokens_per_run);
  }
}

json profile_json(const RunProfile& profile) {
  struct Total {
    int nodes = 0, ran = 0;
    double ms = 0;
  };
  std::map<std::pair<std::string, bool>, Total> totals;
  double all = 0;
  for (const RunProfile::Entry& e : profile.steps) {
    const Node& n = *e.node;
    Total& t = totals[{(n.domain().empty() ? "" : n.domain() + ".") + n.op_type(), e.optimized}];
    ++t.nodes;
    t.ran += e.calls > 0;
    t.ms += e.ms;
    all += e.ms;
  }
  std::vector<std::pair<std::pair<std::string, bool>, Total>> rows(totals.begin(), totals.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  json out = json::array();
  const double runs = std::max(1, profile.runs);
  for (const auto& [key, t] : rows)
    out.push_back({{"op", key.first}, {"kernel", key.second ? "optimized" : "reference"}, {"nodes", t.nodes},
                   {"ran", t.ran}, {"ms_per_run", t.ms / runs}, {"share", all > 0 ? t.ms / all : 0.0}});
  return out;
}

json profile_nodes_json(const RunProfile& profile, const std::vector<double>& step_min_ms, const Bindings& bindings) {
  OCTET_ASSERT(step_min_ms.empty() || step_min_ms.size() == profile.steps.size(),
               "profile_nodes_json: one minimum per step, or none");
  const double runs = std::max(1, profile.runs);
  json out = json::array();
  for (size_t i = 0; i < profile.steps.size(); ++i) {
    const RunProfile::Entry& e = profile.steps[i];
    const Node& n = *e.node;
    json row = {{"name", n.name()},
                {"op", (n.domain().empty() ? "" : n.domain() + ".") + n.op_type()},
                {"kernel", e.optimized ? "optimized" : "reference"},
                {"ms_per_run", e.ms / runs},
                {"calls", e.calls}};
    if (!step_min_ms.empty()) row["min_ms"] = step_min_ms[i];
    if (const std::optional<Dim> macs = node_macs(n))
      if (const std::optional<int64_t> v = evaluate_macs(*macs, bindings)) row["macs"] = *v;
    out.push_back(row);
  }
  return out;
}

std::string render_bench_text(const json& r) {
  std::ostringstream out;
  out << "model:       " << r["model"].get<std::string>() << " (" << fixed(r["model_mb"].get<double>(), 2)
      << " MB), level " << r["level"];
  if (!r["bindings"].empty()) {
    out << ",";
    for (const auto& [k, v] : r["bindings"].items()) out << " " << k << "=" << v;
  }
  out << (r["specialized"].empty() ? " (dims left symbolic)" : " (specialized)") << "\n";
  const std::string cpu = r["cpu"]["model"].get<std::string>();
  out << "cpu:         " << (cpu.empty() ? "unknown" : cpu) << ", " << r["cpu"]["isa"].get<std::string>() << ", "
      << r["threads"] << " thread(s) of " << r["cores"] << " core(s)";
  if (r.value("one_thread_runs", 0) > 0)
    out << "; " << r["one_thread_runs"] << " of " << r["iters"]
        << " timed runs on 1 thread (other processes held the cores; --fixed-threads keeps all)";
  out << "\n";
  out << "kernels:     " << r["kernels"].get<std::string>() << ": " << r["optimized_nodes"] << " of " << r["nodes"]
      << " nodes run optimized kernels";
  if (r.contains("optimizer"))
    out << " (optimizer: " << r["optimizer"]["nodes_before"] << " -> " << r["optimizer"]["nodes_after"] << " nodes)";
  out << "\n";
  if (!r["reference_ops"].empty()) {
    out << "reference:  ";
    const char* sep = " ";
    for (const auto& [op, n] : r["reference_ops"].items()) out << sep << op << " " << n, sep = ", ";
    out << "\n";
  }
  if (!r["fused_ops"].empty()) {
    out << "fused:      ";
    const char* sep = " ";
    for (const auto& [op, n] : r["fused_ops"].items()) out << sep << op << " " << n, sep = ", ";
    out << "\n";
  }
  const json& t = r["timing_ms"];
  out << "setup:       load " << ms(t["load"]) << ", optimize " << ms(t["optimize"]) << ", session "
      << ms(t["session"]) << ", first run " << ms(t["first_run"]) << "\n";
  out << "latency:     p50 " << ms(r["p50_ms"]) << ", p90 " << ms(r["p90_ms"]) << ", mean " << ms(r["mean_ms"])
      << ", min " << ms(r["min_ms"]) << " (" << r["iters"] << " runs after " << r["warmup"] << " warmup)\n";
  out << "throughput:  " << fixed(r["throughput_per_s"].get<double>(), 1) << " inferences/s";
  if (r.contains("tokens_per_s"))
    out << ", " << fixed(r["tokens_per_s"].get<double>(), 0) << " tokens/s (" << r["tokens_per_run"]
        << " tokens per run)";
  out << "\n";
  out << "memory:      peak RSS " << fixed(r["peak_rss_mb"].get<double>(), 1) << " MB, now "
      << fixed(r["rss_mb"].get<double>(), 1) << " MB";
  if (r.value("released_weights_mb", 0.0) > 0)
    out << "; " << fixed(r["released_weights_mb"].get<double>(), 1) << " MB of weights kept only packed";
  out << "\n";
  if (r.contains("profile")) {
    out << "profile:     time per op type, per run (separate profiled runs)\n";
    for (const json& row : r["profile"])
      out << "  " << std::left << std::setw(26) << row["op"].get<std::string>() << std::right << std::setw(10)
          << row["kernel"].get<std::string>() << std::setw(5) << row["nodes"].get<int>() << " node(s) " << std::setw(10)
          << ms(row["ms_per_run"]) << std::setw(7) << fixed(100 * row["share"].get<double>(), 1) << "%\n";
  }
  if (r.contains("outputs_file")) out << "outputs:     " << r["outputs_file"].get<std::string>() << "\n";
  for (const auto& w : r["warnings"]) out << "warning: " << w.get<std::string>() << "\n";
  return out.str();
}

}  // namespace octet::cli
