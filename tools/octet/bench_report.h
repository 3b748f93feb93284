// `octet bench`'s numbers and report. The report is JSON (what --json prints, what
// bench/compare.py reads); the text is rendered from it so the two never disagree.
//
//   {"model", "model_mb", "model_files", "level", "specialized": {sym: n}, "bindings",
//    "kernels": "optimized"|"reference", "threads", "cores", "warmup", "iters",
//    "adapt_threads", "one_thread_runs" (timed runs the session ran on one thread because
//    other processes held the cores; runtime/thread_governor.h),
//    "p50_ms", "p90_ms", "mean_ms", "min_ms", "max_ms", "stddev_ms", "samples_ms": [...],
//    "throughput_per_s", "tokens_per_run"?, "tokens_per_s"?,
//    "peak_rss_mb", "rss_mb", "timing_ms": {"load", "optimize", "session", "first_run"},
//    "nodes", "optimized_nodes", "reference_nodes", "reference_ops": {"ai.onnx::Erf": n},
//    "fused_ops": {"octet.Gelu": n}, "optimizer": OptimizeReport JSON,
//    "cpu": {"model", "isa"}, "inputs": [{"name", "dtype", "shape", "source"}],
//    "outputs_file"?,
//    "profile"?: [{"op", "kernel": "optimized"|"reference", "nodes", "ran", "ms_per_run", "share"}],
//      (ran: the nodes whose kernel ran at all; the others' outputs were folded by the plan)
//    "profile_nodes"?: [{"name", "op", "kernel", "ms_per_run", "min_ms", "calls", "macs"?}] in run order}
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace octet::cli {

struct LatencyStats {
  double p50 = 0, p90 = 0, mean = 0, min = 0, max = 0, stddev = 0;
};

// Percentiles interpolate linearly between the sorted samples (numpy's default), so
// p50 of an even count is the mean of the middle two. `samples` must not be empty.
LatencyStats latency_stats(std::vector<double> samples);

// Adds the latency fields (p50_ms, ...) and the throughput to `report`.
void add_latency_fields(nlohmann::json& report, const std::vector<double>& samples_ms, int64_t tokens_per_run);

// Per-op-type totals of a profile, largest first (the "profile" field).
nlohmann::json profile_json(const octet::RunProfile& profile);

// Every profiled step in run order: mean time, calls, fastest time (step_min_ms, one per
// step of `profile`; empty: none recorded, no min_ms field), and its MACs where macs.h
// counts them (under `bindings`): per-layer time against work, what
// bench/profile_breakdown.py reads.
nlohmann::json profile_nodes_json(const octet::RunProfile& profile, const std::vector<double>& step_min_ms,
                                  const octet::Bindings& bindings);

std::string render_bench_text(const nlohmann::json& report);

}  // namespace octet::cli
