// `octet bench-decode MODEL`: the decode step of a decoder exported with past (optimum's
// names: input_ids, attention_mask, [position_ids], past_key_values.N.* -> logits,
// present.N.*), as a generation loop runs it: a prompt of --past tokens, then --iters
// single-token steps, each timed. Two ways to run it (--mode):
//   in-place  the in-place runner (src/generate/in_place_kv_runner.h): the cache in
//             runner-owned buffers, a step writes only its new rows;
//   session   one optimized Session fed each step's present.N.* back as past (the
//             portable way; the model's Concat copies the cache every step).
// Reports the prompt step's time (prefill_ms, one run), the median and mean step time (ms), the greedy tokens the steps fed (to compare
// engines) and, with --profile, where a step's time goes per op (--profile-nodes: per node). bench/decode_step.py runs this and onnxruntime in turn.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "bench_report.h"
#include "cli_common.h"
#include "generate/in_place_kv_runner.h"
#include "onnx/model_io.h"
#include "passes/pipeline.h"
#include "runtime/session.h"

namespace octet::cli {
namespace {

struct Options {
  std::string model, mode = "in-place";
  int64_t past = 128;
  int threads = 0, iters = 32, warmup = 4;
  bool profile = false, profile_nodes = false;
  std::vector<std::string> disabled;  // optimizer passes left out (baselines)
};

using Clock = std::chrono::steady_clock;

// Deterministic prompt ids below 251 (the tiny fixtures have 256 tokens).
std::vector<int64_t> prompt(int64_t n) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[i] = (i * 37 + 11) % 251;
  return ids;
}

int64_t argmax_last(const Tensor& logits) {
  const int64_t vocab = logits.shape().back();
  const float* row = logits.data<float>() + logits.numel() - vocab;
  return std::max_element(row, row + vocab) - row;
}

// The portable loop: a Session on the optimized graph, presents fed back.
class SessionLoop {
 public:
  SessionLoop(std::shared_ptr<Graph> g, SessionOptions o) : session_(std::move(g), o) {
    for (const Value* v : session_.required_inputs()) {
      const std::string& n = v->name();
      if (n.rfind("past_key_values.", 0) == 0) {
        const DimVector& d = *v->type.dims;
        past_[n] = Tensor(DType::Float32, {1, d[1].constant().value_or(1), 0, d[3].constant().value_or(1)});
      }
      has_positions_ |= n == "position_ids";
    }
  }
  Tensor step(const std::vector<int64_t>& ids, RunProfile* profile) {
    const int64_t s = static_cast<int64_t>(ids.size()), total = cached_ + s;
    NamedTensors in = {{"input_ids", Tensor::from_vector<int64_t>({1, s}, ids)},
                       {"attention_mask", Tensor::from_vector<int64_t>({1, total}, std::vector<int64_t>(total, 1))}};
    if (has_positions_) {
      std::vector<int64_t> pos(static_cast<size_t>(s));
      for (int64_t i = 0; i < s; ++i) pos[i] = cached_ + i;
      in.emplace_back("position_ids", Tensor::from_vector<int64_t>({1, s}, pos));
    }
    for (const auto& [n, t] : past_) in.emplace_back(n, t);
    NamedTensors out = session_.run(in, profile);
    Tensor logits;
    for (auto& [n, t] : out) {
      if (n == "logits") logits = t;
      else if (n.rfind("present.", 0) == 0) past_["past_key_values." + n.substr(8)] = t;
    }
    cached_ = total;
    return logits;
  }

 private:
  Session session_;
  std::map<std::string, Tensor> past_;
  bool has_positions_ = false;
  int64_t cached_ = 0;
};

void run_bench(const Options& o) {
  if (o.mode != "in-place" && o.mode != "session") fail("--mode ", o.mode, ": in-place or session");
  if (o.past < 1 || o.iters < 1 || o.warmup < 0) fail("--past and --iters must be at least 1");
  auto graph = std::shared_ptr<Graph>(load_model(o.model).graph);
  const size_t nodes_before = graph->node_count();
  OptimizeOptions oo;
  oo.disabled_passes.insert(o.disabled.begin(), o.disabled.end());
  optimize(*graph, oo);
  const size_t nodes_after = graph->node_count();
  SessionOptions so;
  so.threads = o.threads;
  std::unique_ptr<generate::DecoderRunner> runner;
  std::unique_ptr<SessionLoop> loop;
  if (o.mode == "in-place") {
    std::string why;
    runner = generate::make_in_place_runner(std::move(graph), so, &why);  // sole owner: weights kept once
    if (!runner) fail(o.model, ": the in-place runner refuses it: ", why);
    runner->reserve(o.past + o.warmup + o.iters + 1);
  } else {
    loop = std::make_unique<SessionLoop>(std::move(graph), so);
  }
  RunProfile profile;
  auto step = [&](const std::vector<int64_t>& ids, bool profiled) {
    if (runner) {
      generate::profile_in_place_runner(*runner, profiled ? &profile : nullptr);
      generate::DecoderStep s;
      s.tokens = ids;
      return runner->step(s);
    }
    return loop->step(ids, profiled ? &profile : nullptr);
  };
  // The prompt step (prefill) once, timed too: its plan and arena are the first the runner makes.
  const auto p0 = Clock::now();
  Tensor logits = step(prompt(o.past), false);
  const double prefill_ms = std::chrono::duration<double, std::milli>(Clock::now() - p0).count();
  std::vector<double> ms;
  std::vector<int64_t> tokens;
  for (int i = 0; i < o.warmup + o.iters; ++i) {
    tokens.push_back(argmax_last(logits));
    const auto t0 = Clock::now();
    logits = step({tokens.back()}, o.profile && i >= o.warmup);
    if (i >= o.warmup) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double m : ms) mean += m / ms.size();
  nlohmann::json r = {{"model", o.model}, {"mode", o.mode}, {"past", o.past}, {"iters", o.iters},
                      {"threads", o.threads}, {"nodes_before", nodes_before}, {"nodes_after", nodes_after},
                      {"prefill_ms", prefill_ms}, {"median_ms", sorted[sorted.size() / 2]}, {"mean_ms", mean}, {"min_ms", sorted.front()},
                      {"tokens", tokens}, {"disabled_passes", o.disabled}};
  if (o.profile) {
    profile.runs = o.iters;
    r["profile"] = profile_json(profile);
    // Per node in run order; a node whose outputs the plan folded shows calls 0. MACs
    // where they do not depend on the step's dims.
    if (o.profile_nodes) r["profile_nodes"] = profile_nodes_json(profile, {}, {});
  }
  std::cout << r.dump(1) << "\n";
}

}  // namespace

void add_bench_decode_command(CLI::App& app) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "bench-decode",
      "Time the decode step of a decoder exported with past (optimum's names): a prompt of\n"
      "--past tokens, then --iters greedy single-token steps, each timed; JSON report.");
  cmd->add_option("model", opts->model, "ONNX model file (with past_key_values.N.* inputs)")->required();
  cmd->add_option("--mode", opts->mode, "in-place (runner-owned cache, default) or session (presents fed back)");
  cmd->add_option("--past", opts->past, "Prompt tokens before the timed steps (default 128)");
  cmd->add_option("--iters", opts->iters, "Timed steps (default 32)");
  cmd->add_option("--warmup", opts->warmup, "Untimed steps first (default 4)");
  cmd->add_option("--threads", opts->threads, "Threads per kernel (default 0: one per core)");
  cmd->add_flag("--profile", opts->profile, "Add the per-op time of the timed steps");
  cmd->add_flag("--profile-nodes", opts->profile_nodes, "With --profile: add every node's time, in run order");
  cmd->add_option("--disable", opts->disabled, "Leave an optimizer pass out (a baseline), e.g. fuse_grouped_attention");
  cmd->callback([opts] { run_bench(*opts); });
}

}  // namespace octet::cli
