#include "quant/quantize.h"

#include <malloc.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "analysis/macs.h"
#include "analysis/model_files.h"
#include "passes/pipeline.h"
#include "passes/rewrites/rewrites.h"
#include "quant/calibrate.h"
#include "quant/calibration_data.h"
#include "quant/default_mode.h"
#include "quant/evaluate.h"
#include "quant/gptq.h"
#include "quant/qdq_rewrite.h"
#include "quant/raise_opset.h"
#include "quant/smooth_fold.h"
#include "quant/quantize_plan.h"
#include "quant/target_profile.h"
#include "runtime/session.h"

namespace octet::quant {
namespace {

// Hands freed heap memory back to the system between the quantizer's big phases (glibc
// keeps freed Gram matrices and proto buffers resident otherwise: 250 MB on SmolLM2).
void return_freed_memory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

// The float model as the quantizer sees it: cleaned up (folded, no dead code or no-ops)
// but not fused, so every matmul is still a standard op the target runtimes know. The
// same steps on the same file give the same value names, which is how the float copy and
// the quantized graph are compared tensor by tensor.
void clean_float_graph(Graph& graph, const std::filesystem::path& path) {
  const int64_t opset = graph.opset_version("");
  if (opset < 13)
    fail(path.string(), ": opset ", opset, " is too old to quantize (per-channel DequantizeLinear needs opset 13); "
         "re-export the model with opset 13 or newer");
  OptimizeOptions o;
  o.level = 1;
  optimize(graph, o);
}

std::vector<const Value*> required_inputs(const Graph& g) {
  std::vector<const Value*> out;
  for (const Value* v : g.inputs())
    if (!v->is_initializer()) out.push_back(v);
  return out;
}

// MACs are counted at the user's --dim sizes, else at the first sample's input shapes,
// else with 1 for batch-like symbols and 128 for the rest.
Bindings coverage_bindings(const QuantizeJob& job, const Graph& g, const CalibrationSource* source) {
  Bindings b = job.dims;
  if (source && source->size()) {
    for (const auto& [name, t] : source->sample(0)) {
      const Value* v = g.find_value(name);
      if (!v || !v->type.dims || v->type.dims->size() != t.shape().size()) continue;
      for (size_t i = 0; i < t.shape().size(); ++i)
        if (const Dim& d = (*v->type.dims)[i]; d.is_symbol() && !b.count(d.symbol_name())) b[d.symbol_name()] = t.shape()[i];
    }
  }
  for (const Value* v : required_inputs(g)) {
    if (!v->type.dims) continue;
    for (const Dim& d : *v->type.dims)
      if (d.is_symbol() && !b.count(d.symbol_name()))
        b[d.symbol_name()] = d.symbol_name().find("batch") != std::string::npos ? 1 : 128;
  }
  return b;
}

std::string bindings_text(const Bindings& b) {
  std::string s;
  for (const auto& [k, v] : b) s += (s.empty() ? "" : ", ") + k + "=" + std::to_string(v);
  return s.empty() ? "static shapes" : s;
}

std::vector<size_t> first(const std::vector<size_t>& v, size_t n) {
  return std::vector<size_t>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size())));
}

// Wall and CPU seconds per stage on stderr when OCTET_QUANT_PHASES is set: where a
// quantization's time goes, measurable on a shared machine (CPU seconds do not grow with
// other processes' load the way wall time does).
class PhaseClock {
 public:
  PhaseClock() : on_(std::getenv("OCTET_QUANT_PHASES") != nullptr) { reset(); }
  void done(const char* phase) {
    if (!on_) return;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count();
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    long pages = 0, resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
      std::fclose(f);
    }
    std::fprintf(stderr, "phase %-34s wall %7.2f s  cpu %7.2f s  RSS %6.0f MB, peak so far %6.0f MB\n", phase, wall,
                 cpu() - cpu_, static_cast<double>(resident) * 4096.0 / 1048576.0, static_cast<double>(u.ru_maxrss) / 1024.0);
    reset();
  }

 private:
  static double cpu() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  }
  void reset() {
    wall_ = std::chrono::steady_clock::now();
    cpu_ = cpu();
  }
  bool on_;
  std::chrono::steady_clock::time_point wall_;
  double cpu_ = 0;
};

// The float model is loaded once and its weights are never copied: sessions on it read
// the graph's plain weights (no packed copy), SmoothQuant scales it in place, and each
// quantized variant is a clone sharing its tensors, in which the rewrite replaces the
// weights it quantizes. On SmolLM2-135M (626 MiB of weights) this took the static recipe
// from 4.4 GB peak RSS (a load per variant, a packed copy per session) to about twice
// the file.
SessionOptions unpacked() {
  SessionOptions o;
  o.pack_weights = false;
  return o;
}

Session float_session(const std::shared_ptr<Graph>& graph) {
  return Session(std::shared_ptr<const Graph>(graph), unpacked());
}

// `meta`'s file-level fields (opsets aside, which live in the graph) around `graph`.
Model with_graph(const Model& meta, std::unique_ptr<Graph> graph) {
  Model m;
  m.graph = std::move(graph);
  m.ir_version = meta.ir_version;
  m.producer_name = meta.producer_name;
  m.producer_version = meta.producer_version;
  m.domain = meta.domain;
  m.doc_string = meta.doc_string;
  m.model_version = meta.model_version;
  m.metadata = meta.metadata;
  m.preserved_proto = meta.preserved_proto;
  m.source_path = meta.source_path;
  m.declared = meta.declared;
  return m;
}

ActivationTable calibrate_plan(const std::shared_ptr<Graph>& float_graph, const QuantizePlan& plan,
                               const CalibrationSource& source, const std::vector<size_t>& samples,
                               const QuantizeOptions& o, const ProgressFn& progress, size_t* used = nullptr) {
  std::vector<std::string> names;
  for (const Value* v : plan.activations) names.push_back(v->name());
  CalibrationResult calibration = calibrate(float_session(float_graph), names, source, samples, o, progress);
  keep_observed_range(calibration, attention_operands(plan), o);
  if (used) *used = calibration.samples;
  return calibration.table();
}

// A quantized variant of the float graph as octet runs it (optimized), in memory: what
// mixed precision and the without-smoothing comparison measure. The session owns it, so
// it keeps the int8 weights once (packed). `prepared`: GPTQ-rounded weights, or null.
Session quantized_session(const Graph& float_graph, const QuantizeOptions& o, const ActivationTable& params,
                          const PreparedWeights* prepared = nullptr) {
  std::shared_ptr<Graph> g = float_graph.clone();
  write_quantized_graph(*g, plan_quantization(*g, o), params, o, prepared);
  optimize(*g);
  return Session(std::move(g));
}

std::string alpha_setting(const SmoothingRequest& r) {
  if (!r.alpha) return "auto";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", *r.alpha);
  return buf;
}

// The stage's progress function: the caller's sink, else a bar on stderr, else none.
ProgressFn stage_progress(const QuantizeJob& job, const std::string& label) {
  if (job.progress_sink) return job.progress_sink(label);
  return job.progress ? stderr_progress(label) : ProgressFn{};
}

// Per-channel statistics of every weight layer's input and, when asked, the smoothing
// decisions they lead to (none smoothed under --explain alone).
std::vector<SmoothingDecision> decide(const QuantizeJob& job, const std::shared_ptr<Graph>& float_graph,
                                      const CalibrationSource& source, const std::vector<size_t>& samples,
                                      std::map<std::string, LayerInputStats>& input_stats, PhaseClock& clock,
                                      ActivationTable* plain_params) {
  constexpr size_t kKeptRows = 256;  // per activation, for the alpha search's error estimate
  Graph& graph = *float_graph;
  const QuantizePlan plan = plan_quantization(graph, job.options);
  const std::vector<SmoothGroup> groups = find_smooth_groups(graph, plan);
  std::map<std::string, ChannelStatsObserver> stats;
  for (const SmoothGroup& g : groups) stats.emplace(g.activation, ChannelStatsObserver(g.activation, g.channels, kKeptRows));
  const ValueObserver watch = [&](const Value& v, const Tensor& t) {
    if (auto it = stats.find(v.name()); it != stats.end()) it->second.observe(t);
  };
  // One pass of the original float model: the channel statistics and, when the report
  // compares against no smoothing, that job's calibration (the same model and samples).
  std::vector<std::string> names;
  if (plain_params)
    for (const Value* v : plan.activations) names.push_back(v->name());
  CalibrationResult plain = calibrate(float_session(float_graph), names, source, samples, job.options,
                                            stage_progress(job, "channel statistics"), watch);
  keep_observed_range(plain, attention_operands(plan), job.options);
  if (plain_params) *plain_params = plain.table();
  SmoothingRequest request{std::nullopt, std::numeric_limits<double>::infinity()};
  if (job.smoothing) request = *job.smoothing;
  clock.done("channel statistics");
  std::vector<SmoothingDecision> decisions = decide_smoothing(graph, groups, stats, request, job.options);
  clock.done("smoothing search");
  for (SmoothingDecision& d : decisions) {
    if (!job.smoothing) d.reason = "SmoothQuant not requested";
    LayerInputStats s{d.act_min, d.act_max, d.outlier_ratio, std::nullopt, 1, 1};
    if (d.smoothed) {
      s.smooth_alpha = d.alpha;
      s.scale_min = *std::min_element(d.scale.begin(), d.scale.end());
      s.scale_max = *std::max_element(d.scale.begin(), d.scale.end());
    }
    for (const std::string& node : d.group.consumers) input_stats[node] = s;
  }
  return decisions;
}

}  // namespace

QuantizeReport quantize_model(const QuantizeJob& requested) {
  const auto start = std::chrono::steady_clock::now();
  QuantizeJob job = requested;  // the default mode is settled once the model is loaded
  QuantizeReport report;
  report.model = job.model.string();
  report.output = job.output.string();
  report.explain = job.explain;
  const auto progress = [&](const char* label) { return stage_progress(job, label); };
  PhaseClock clock;

  // The one float load. Sessions on it read its weights in place; SmoothQuant changes it
  // in place (it then computes the same, checked below); the quantized graph is a clone.
  Model model = load_model(job.model);
  clock.done("read");
  clean_float_graph(*model.graph, job.model);
  for (const std::string& w : model.warnings) report.notes.push_back("warning: " + w);
  const std::shared_ptr<Graph> float_graph(model.graph.release());
  report.float_file_bytes = model_files(job.model).bytes;
  report.float_weight_bytes = weight_bytes(*float_graph);

  std::optional<CalibrationSource> source;
  if (!job.calib.empty())
    source = CalibrationSource::open(job.calib, input_specs(required_inputs(*float_graph)), job.calib_samples);
  if (job.options.mode == Mode::Static && !source)
    fail("static quantization needs calibration samples: pass --calib PATH (or --mode dynamic)");
  if (!source && (job.smoothing || job.explain || job.max_drop))
    fail("--smoothquant, --explain and --max-drop measure the model on samples: pass --calib PATH");
  std::vector<size_t> calib_idx, eval_idx;
  if (source) {
    std::tie(calib_idx, eval_idx) = split_holdout(source->size(), job.holdout);
    report.calibration_source = source->describe();
    report.eval_in_sample = eval_idx.empty();
    if (eval_idx.empty()) eval_idx = calib_idx;
  }

  settle_default_mode(job, [&] { return float_session(float_graph); }, source ? &*source : nullptr, calib_idx, report);
  QuantizeOptions o = job.options;  // mixed precision adds exclusions
  // int16 probabilities are QuantizeLinear to int16: opset 21.
  if (writes_wide_probabilities(o) && float_graph->opset_version("") < 21) {
    const char* why = "QuantizeLinear of the attention probabilities to int16 needs it";
    for (const std::string& note : raise_opset_to_21(*float_graph, job.model.string(), why)) report.notes.push_back(note);
  }
  report.options = o;
  clock.done("clean");

  // SmoothQuant: decide on the original float model. Before it is smoothed, measure the
  // same job without smoothing (and without mixed precision) for the report, and keep the
  // original's outputs on two samples to prove the smoothed model computes the same.
  std::vector<SmoothingDecision> smoothing;
  std::map<std::string, LayerInputStats> input_stats;
  ActivationTable plain_params;  // the same job without smoothing, for the report
  const bool compare_plain = job.smoothing && o.mode == Mode::Static;
  if (job.smoothing || job.explain)
    smoothing = decide(job, float_graph, *source, calib_idx, input_stats, clock, compare_plain ? &plain_params : nullptr);
  if (job.smoothing) {
    SmoothingReport sr;
    sr.setting = alpha_setting(*job.smoothing);
    sr.min_outlier_ratio = job.smoothing->min_outlier_ratio;
    const std::vector<size_t> check_idx = first(calib_idx, 2);
    std::vector<NamedTensors> original;
    {
      const Session original_session = float_session(float_graph);
      for (size_t i : check_idx) original.push_back(original_session.run(source->sample(i)));
      // GPTQ too when the job uses it (on the unsmoothed inputs): only smoothing differs.
      std::shared_ptr<const PreparedWeights> plain_prepared;
      if (job.gptq) {
        GptqSummary ignored;
        plain_prepared = gptq_weights(original_session, plan_quantization(*float_graph, job.options), *source,
                                      calib_idx, o.per_channel_weights, o.activation_type,
                                      progress("GPTQ rounding without smoothing"),
                                      ignored);
      }
      const Session plain = quantized_session(*float_graph, job.options, plain_params, plain_prepared.get());
      sr.fidelity_without = output_fidelity(original_session, plain, *source, eval_idx);
      clock.done("fidelity without smoothing");
    }
    const std::vector<SmoothFold> folds = apply_smoothing(*float_graph, smoothing);
    size_t fold = 0;
    for (const SmoothingDecision& d : smoothing)
      sr.groups.push_back({d.group.activation, d.group.consumers, d.outlier_ratio, d.smoothed, d.alpha, d.reason,
                           d.smoothed ? folds[fold++].where : "", d.error_plain, d.error_smoothed});
    sr.max_relative_error = max_relative_error(original, float_session(float_graph), *source, check_idx);
    report.smoothing = std::move(sr);
    clock.done("smoothing applied and checked");
  }

  QuantizePlan plan = plan_quantization(*float_graph, o);
  ActivationTable params;
  if (o.mode == Mode::Static)
    params = calibrate_plan(float_graph, plan, *source, calib_idx, o, progress("calibrating"), &report.calibration_samples);
  clock.done("calibration");

  // GPTQ: weights rounded against their inputs' Gram matrices on the (smoothed) float model.
  std::shared_ptr<const PreparedWeights> prepared;
  if (source && job.gptq) {
    GptqSummary g;
    prepared = gptq_weights(float_session(float_graph), plan, *source, calib_idx, o.per_channel_weights, o.activation_type,
                            progress("GPTQ rounding"), g);
    report.gptq = GptqReport{g.layers, g.calibration_passes, g.error_nearest, g.error_gptq};
    for (const SkippedNode& s : g.skipped) report.notes.push_back("GPTQ: '" + s.node->name() + "' " + s.reason);
    return_freed_memory();
    clock.done("GPTQ");
  }

  std::map<std::string, std::string> mixed_reasons;
  if (job.max_drop) {
    const Session reference = float_session(float_graph);
    std::vector<std::string> layers;
    for (const QuantizedNode& q : plan.nodes) layers.push_back(q.node->name());
    auto drop = [&](const std::set<std::string>& float_layers) {
      QuantizeOptions variant = o;
      variant.exclude.insert(float_layers.begin(), float_layers.end());
      const Session s = quantized_session(*float_graph, variant, params, prepared.get());
      return metric_drop(output_fidelity(reference, s, *source, eval_idx), job.metric);
    };
    const MixedPrecisionResult mp = search_mixed_precision(layers, drop, *job.max_drop, progress("mixed precision"));
    MixedPrecisionReport mr{metric_name(job.metric), *job.max_drop, mp.drop_all_int8, mp.final_drop, mp.met, mp.evaluations, {}};
    for (const FloatLayer& l : mp.float_layers) {
      mr.float_layers.push_back({l.node, l.drop_alone});
      mixed_reasons[l.node] = l.reason;
      o.exclude.insert(l.node);
    }
    report.mixed_precision = std::move(mr);
    plan = plan_quantization(*float_graph, o);
  }
  for (const SkippedNode& s : plan.skipped) {
    auto why = mixed_reasons.find(s.node->name());
    report.skipped.push_back({s.node->name(), s.node->op_type(), why != mixed_reasons.end() ? why->second : s.reason});
  }

  // Without samples nothing reads the float graph again: rewrite it in place, so each
  // float weight is freed as its int8 copy replaces it. Otherwise rewrite a clone (the plan
  // names nodes, which the clone has under the same names).
  std::shared_ptr<Graph> quantized = source ? std::shared_ptr<Graph>(float_graph->clone()) : float_graph;
  if (source) plan = plan_quantization(*quantized, o);
  RewriteResult rewrite = write_quantized_graph(*quantized, plan, params, o, prepared.get());
  clock.done("rewrite");
  for (const SkippedNode& s : rewrite.skipped) report.skipped.push_back({s.node->name(), s.node->op_type(), s.reason});

  std::vector<std::string> problems = check_target_profile(*quantized, o.target);
  if (!problems.empty()) {
    std::string all;
    for (const std::string& p : problems) all += "\n  " + p;
    fail("the quantized graph breaks the ", target_name(o.target), " profile, nothing written:", all);
  }
  const Bindings bindings = coverage_bindings(job, *quantized, source ? &*source : nullptr);
  report.bindings = bindings_text(bindings);
  report.coverage = int8_coverage(*quantized, bindings);
  report.quantized_weight_bytes = weight_bytes(*quantized);
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const RewrittenLayer& l : rewrite.layers) {
    pairs.emplace_back(l.float_output, l.quantized_output->name());
    LayerReport lr{l.node, l.op, kind_name(l.kind), l.float_output, std::nullopt, std::nullopt, std::nullopt};
    if (const Node* n = quantized->find_value(l.quantized_output->name())->producer())
      if (auto macs = node_macs(*n)) lr.macs = evaluate_macs(*macs, bindings);
    if (auto it = input_stats.find(l.node); it != input_stats.end()) lr.input = it->second;
    report.layers.push_back(lr);
  }

  // The clone for the save is structure only: it shares the quantized graph's tensors.
  for (const std::string& w : save_model(with_graph(model, quantized->clone()), job.output, job.save))
    report.notes.push_back(w);
  report.quantized_file_bytes = model_files(job.output).bytes;
  return_freed_memory();
  clock.done("rewrite and save");

  if (source) {
    // Layer SQNR on the graph as written (Q/DQ computed as float: the int8 kernels agree
    // with it to float rounding) against the float graph it was rewritten from (smoothed
    // when asked: the names line up); fidelity on the file as octet will run it, against
    // the float model (the smoothed one computes the original's outputs, to the max
    // relative error the smoothing report shows).
    const Session reference = float_session(float_graph);
    {
      // Embeddings dequantize only the rows a sample reads (an exact rewrite): run as
      // written, DequantizeLinear makes the whole table float on every run (113 MB on
      // SmolLM2, at the quantizer's peak RSS).
      Pipeline({passes::gather_quantized_rows(), passes::eliminate_dead_code()}).run(*quantized, OptimizeOptions{});
      const Session fake_quant(std::shared_ptr<const Graph>(std::move(quantized)), unpacked());
      const auto sqnr = layer_sqnr(reference, fake_quant, pairs, *source, first(calib_idx, job.sqnr_samples));
      for (LayerReport& l : report.layers)
        if (auto it = sqnr.find(l.output); it != sqnr.end()) l.sqnr_db = it->second;
    }
    clock.done("layer SQNR");
    Model written = load_model(job.output);
    optimize(*written.graph);
    const Session runtime(std::shared_ptr<Graph>(std::move(written.graph)));
    report.fidelity = output_fidelity(reference, runtime, *source, eval_idx);
    report.eval_samples = eval_idx.size();
    clock.done("fidelity");
    if (report.eval_in_sample)
      report.notes.push_back("fewer than 5 samples: fidelity is measured on the calibration samples themselves");
  } else {
    report.notes.push_back("no samples given: pass --calib PATH to measure layer SQNR and output fidelity");
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace octet::quant
