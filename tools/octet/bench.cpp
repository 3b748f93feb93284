// `octet bench MODEL`: optimizes a model the way a deployment would, creates one Session,
// runs warmup then timed iterations on the same inputs, and reports latency percentiles,
// throughput, peak memory and which nodes still run the slow reference kernels.
#include <omp.h>

#include <cctype>
#include <chrono>
#include <iostream>

#include "analysis/model_files.h"
#include "analysis/model_summary.h"
#include "bench_report.h"
#include "cli_common.h"
#include "io/output_file.h"
#include "io/npy.h"
#include "kernels/dispatch/cpu_features.h"
#include "model_prep.h"
#include "runtime/process_memory.h"

namespace octet::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Options {
  std::string model, out, seq_dim;
  std::vector<std::string> inputs, dims;
  int threads = 0, warmup = 10, iters = 100, level = 2;
  bool reference = false, random = false, json = false, dynamic = false, profile = false, fixed_threads = false;
  uint64_t seed = 0;
};

const char* kFooter = R"(WHAT IS MEASURED
  The model is loaded, specialized to the --dim sizes (unless --dynamic), optimized at
  --level, and one Session is created; load, optimize and session-creation times are
  reported apart from the runs. Then --warmup runs and --iters timed runs, all on the
  same inputs. Latency is wall time of Session::run per inference (p50/p90 interpolate
  like numpy.percentile); throughput is 1000 / mean latency, and tokens/s multiplies it
  by the tokens per run (batch * seq) when a seq dim is bound (--seq-dim picks it, by
  default the bound dim whose name contains "seq").

  peak_rss_mb is the process's high-water resident memory: the model, the optimizer's
  work and the runs (VmHWM on Linux; getrusage ru_maxrss elsewhere, which on Linux also
  counts a parent's memory at exec). rss_mb is the resident memory after the runs.
  released_weights_mb is the weights the session keeps only in its kernels' packed
  layout, their plain copy dropped (oneDNN's blocked layouts under AVX-512).
  model_mb counts the .onnx file and its external data files. The report lists the ops
  that still run reference kernels: the slow spots.

INPUTS
  As for `octet run`: --input NAME=FILE (.npy, .pb, or .npz; FILE.npz alone feeds every
  array to the input of the same name). Inputs not given as files are generated as
  `octet run --random` does (ids within the vocabulary, masks of ones, N(0,1) floats);
  --random is implied when no --input is given. Generated inputs need every dim bound:
  --dim batch=1 --dim seq=128 (or INPUT:AXIS=N for an unnamed dim).

The exit status is 0 on success, 1 for any error (one line on stderr).)";

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

void check_options(const Options& o) {
  check_level(o.level);
  if (o.iters < 1) fail("--iters ", o.iters, ": must be at least 1");
  if (o.warmup < 0) fail("--warmup ", o.warmup, ": must not be negative");
  if (o.threads < 0) fail("--threads ", o.threads, ": must not be negative (0 means one per core)");
  if (!o.out.empty() && fs::path(o.out).extension() != ".npz")
    fail("--out ", o.out, ": bench writes one .npz archive; name it FILE.npz");
  if (!o.out.empty()) check_replaceable(o.out);
}

// Tokens one run processes: batch * seq when a seq dim is bound (decoders and encoders
// alike process every position of the prompt), 0 when none is.
int64_t tokens_per_run(const Bindings& bindings, const std::string& seq_dim) {
  auto contains = [](std::string name, const char* what) {
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return name.find(what) != std::string::npos;
  };
  if (!seq_dim.empty() && !bindings.count(seq_dim)) {
    std::string bound;
    for (const auto& [name, value] : bindings)
      if (!Dim::is_anonymous_name(name)) bound += (bound.empty() ? "" : ", ") + name;
    fail("--seq-dim ", seq_dim, ": no dim of that name is bound (bound: ", bound.empty() ? "none" : bound, ")");
  }
  int64_t seq = 0, batch = 1;
  for (const auto& [name, value] : bindings) {
    if (Dim::is_anonymous_name(name)) continue;
    if (seq_dim.empty() ? (seq == 0 && contains(name, "seq")) : name == seq_dim) seq = value;
    else if (contains(name, "batch")) batch = value;
  }
  return seq * batch;
}

json named_bindings(const Bindings& bindings) {
  json j = json::object();
  for (const auto& [name, value] : bindings)
    if (!Dim::is_anonymous_name(name)) j[name] = value;
  return j;
}

void write_outputs(const fs::path& path, const NamedTensors& outputs, const std::vector<fs::path>& reads) {
  std::error_code ec;
  for (const fs::path& f : reads)
    if (!f.empty() && fs::exists(path, ec) && fs::equivalent(path, f, ec))
      fail("--out ", path.string(), " would overwrite ", f.string(), ", which this command reads");
  NamedArrays arrays;
  for (const auto& [name, t] : outputs) {
    std::string key = name;
    for (char& c : key) if (c == '/' || c == '\\') c = '_';
    arrays.emplace_back(key.empty() ? "_" : key, t);
  }
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  write_npz(path, arrays);
}

void bench_command(const Options& o) {
  check_options(o);
  PrepareOptions prep;
  prep.dims = o.dims;
  prep.level = o.level;
  prep.specialize = !o.dynamic;
  PreparedModel p = prepare_model(o.model, prep);
  const json optimizer = p.report.to_json();
  const auto fused = octet_op_counts(*p.model.graph);

  SessionOptions session_options;
  session_options.threads = o.threads;
  session_options.adapt_threads = !o.fixed_threads;
  session_options.kernels = o.reference ? KernelChoice::Reference : KernelChoice::Optimized;
  auto start = std::chrono::steady_clock::now();
  // The session takes the only reference to the graph, so it may drop the weights its
  // kernels keep packed (released_weights_mb).
  const std::unique_ptr<Session> session = make_session(std::move(p.model.graph), session_options, o.model);
  const double session_ms = ms_since(start);

  Bindings bindings = p.dims.symbols;
  std::vector<RunInput> inputs = load_input_files(*session, o.inputs);
  std::vector<fs::path> reads = {fs::path(o.model)};
  for (const RunInput& in : inputs) {
    check_input(*session, in, bindings, p.dims.symbols);
    reads.push_back(in.file);
  }
  std::vector<RunInput> made =
      make_missing_inputs(*session, inputs, o.random || o.inputs.empty(), p.dims, bindings, o.seed);
  inputs.insert(inputs.end(), made.begin(), made.end());
  NamedTensors feeds;
  json inputs_json = json::array();
  for (const RunInput& in : inputs) {
    feeds.emplace_back(in.name, in.tensor);
    inputs_json.push_back({{"name", in.name}, {"dtype", dtype_name(in.tensor.dtype())},
                           {"shape", in.tensor.shape()}, {"source", in.source}});
  }
  const int64_t tokens = tokens_per_run(bindings, o.seq_dim);

  double first_run_ms = -1;
  for (int i = 0; i < o.warmup; ++i) {
    start = std::chrono::steady_clock::now();
    session->run(feeds);
    if (i == 0) first_run_ms = ms_since(start);
  }
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(o.iters));
  NamedTensors outputs;
  const ThreadGovernor::Stats before_timed = session->thread_stats();
  for (int i = 0; i < o.iters; ++i) {
    start = std::chrono::steady_clock::now();
    outputs = session->run(feeds);
    samples.push_back(ms_since(start));
  }
  if (first_run_ms < 0) first_run_ms = samples.front();
  const int64_t one_thread_runs = session->thread_stats().reduced_runs - before_timed.reduced_runs;
  // Profiled runs come after the timed ones: reading the clock per step must not bend
  // the latency numbers.
  // Each profiled run also keeps every step's fastest time: on a shared machine the sums
  // carry other processes' time, the per-step minimum mostly does not.
  RunProfile profile;
  std::vector<double> step_min_ms;
  if (o.profile)
    for (int i = 0; i < o.iters; ++i) {
      RunProfile one;
      session->run(feeds, &one);
      if (profile.steps.empty()) profile.steps = one.steps, step_min_ms.assign(one.steps.size(), 1e300);
      else
        for (size_t s = 0; s < one.steps.size(); ++s) profile.steps[s].ms += one.steps[s].ms;
      for (size_t s = 0; s < one.steps.size(); ++s) step_min_ms[s] = std::min(step_min_ms[s], one.steps[s].ms);
      ++profile.runs;
    }
  // Memory before anything below allocates (reading the model's file list parses it).
  const double peak_rss_mb = static_cast<double>(peak_rss_bytes()) / (1024.0 * 1024.0);
  const double rss_mb = static_cast<double>(current_rss_bytes()) / (1024.0 * 1024.0);

  const ModelFiles files = model_files(o.model);
  json files_json = json::array();
  for (const fs::path& f : files.all()) files_json.push_back(f.string());
  const auto ref_ops = session->reference_ops();
  int reference_nodes = 0;
  for (const auto& [op, n] : ref_ops) reference_nodes += n;

  json report = {{"model", o.model},
                 {"model_mb", static_cast<double>(files.bytes) / (1024.0 * 1024.0)},
                 {"model_files", files_json},
                 {"level", o.level},
                 {"specialized", named_bindings(p.specialized)},
                 {"bindings", named_bindings(bindings)},
                 {"kernels", o.reference ? "reference" : "optimized"},
                 {"threads", session->threads()},
                 {"adapt_threads", !o.fixed_threads},
                 {"one_thread_runs", one_thread_runs},
                 {"cores", omp_get_num_procs()},
                 {"warmup", o.warmup},
                 {"iters", o.iters},
                 {"peak_rss_mb", peak_rss_mb},
                 {"rss_mb", rss_mb},
                 {"timing_ms", {{"load", p.load_ms}, {"optimize", p.optimize_ms}, {"session", session_ms},
                                {"first_run", first_run_ms}}},
                 {"released_weights_mb", static_cast<double>(session->released_weight_bytes()) / (1024.0 * 1024.0)},
                 {"nodes", session->graph().node_count()},
                 {"optimized_nodes", session->optimized_nodes()},
                 {"reference_nodes", reference_nodes},
                 {"reference_ops", ref_ops},
                 {"fused_ops", fused},
                 {"optimizer", optimizer},
                 {"cpu", {{"model", cpu_model_name()}, {"isa", isa_name(active_isa())}}},
                 {"inputs", inputs_json},
                 {"warnings", p.model.warnings}};
  add_latency_fields(report, samples, tokens);
  if (o.profile) {
    report["profile"] = profile_json(profile);
    report["profile_nodes"] = profile_nodes_json(profile, step_min_ms, bindings);
  }
  if (!o.out.empty()) {
    write_outputs(o.out, outputs, reads);
    report["outputs_file"] = o.out;
  }
  if (o.json) std::cout << report.dump(2) << "\n";
  else std::cout << render_bench_text(report);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Measure a model on octet: optimize, create one session, run warmup then timed\n"
      "iterations; report latency p50/p90/mean/min, throughput, peak memory, and the ops\n"
      "that still run reference (slow) kernels.");
  cmd->add_option("model", opts->model, "ONNX model file")->required();
  cmd->add_option("--dim", opts->dims,
                  "Bind a symbolic dim, e.g. --dim batch=1 --dim seq=128: sizes the generated\n"
                  "inputs and specializes the model to it (see --dynamic)")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  cmd->add_option("--threads", opts->threads,
                  "Threads each kernel may use (default 0: one per core this process may run on)");
  cmd->add_flag("--fixed-threads", opts->fixed_threads,
                "Use --threads in every run. By default a run uses one thread while other processes\n"
                "compete for the cores (faster there than waiting OpenMP threads; the same outputs)\n"
                "and the report counts such runs (one_thread_runs)");
  cmd->add_option("--warmup", opts->warmup, "Untimed runs before measuring (default 10)");
  cmd->add_option("--iters", opts->iters, "Timed runs (default 100)");
  cmd->add_option("--level", opts->level, "Optimizer level 0, 1 or 2 (default 2; see `octet optimize --help`)");
  cmd->add_flag("--reference", opts->reference,
                "Run the scalar reference kernels only (the baseline the optimized kernels beat)");
  cmd->add_flag("--dynamic", opts->dynamic,
                "Keep the model's dims symbolic when optimizing (--dim then only sizes the inputs)");
  cmd->add_option("--input,-i", opts->inputs, "An input from a file: NAME=FILE (.npy, .npz, .pb), repeatable")
      ->type_name("NAME=FILE")
      ->allow_extra_args(false);
  cmd->add_flag("--random", opts->random, "Generate every input not given by --input (implied without --input)");
  cmd->add_option("--seed", opts->seed, "Seed for generated inputs (default 0)");
  cmd->add_option("--seq-dim", opts->seq_dim, "The dim that counts tokens for tokens/s (default: a bound dim named *seq*)")
      ->type_name("NAME");
  cmd->add_option("--out", opts->out, "Write the outputs of the last timed run to FILE.npz (to check them)")
      ->type_name("FILE.npz");
  cmd->add_flag("--profile", opts->profile,
                "Also time every node over --iters extra runs and report the time per op type\n"
                "(after the timed runs, so the latency numbers stay unaffected)");
  cmd->add_flag("--json", opts->json, "Print the report as JSON (fields p50_ms, p90_ms, mean_ms, min_ms, ...)");
  cmd->footer(kFooter);
  cmd->callback([opts] { bench_command(*opts); });
}

}  // namespace octet::cli
