#include "quant/quantize.h"

#include <chrono>
#include <cmath>
#include <limits>

#include "analysis/macs.h"
#include "analysis/model_files.h"
#include "passes/pipeline.h"
#include "quant/calibrate.h"
#include "quant/calibration_data.h"
#include "quant/evaluate.h"
#include "quant/gptq.h"
#include "quant/qdq_rewrite.h"
#include "quant/smooth_fold.h"
#include "quant/quantize_plan.h"
#include "quant/target_profile.h"
#include "runtime/session.h"

namespace octet::quant {
namespace {

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

Model load_clean(const std::filesystem::path& path) {
  Model m = load_model(path);
  clean_float_graph(*m.graph, path);
  return m;
}

// The float model the quantizer rewrites: cleaned, then smoothed. Value and node names
// depend only on the file and the decisions, so every load lines up with every other.
Model load_prepared(const std::filesystem::path& path, const std::vector<SmoothingDecision>& smoothing) {
  Model m = load_clean(path);
  apply_smoothing(*m.graph, smoothing);
  return m;
}

std::shared_ptr<const Graph> shared(Model&& m) { return std::shared_ptr<const Graph>(m.graph.release()); }

ActivationTable calibrate_plan(std::shared_ptr<const Graph> float_graph, const QuantizePlan& plan,
                               const CalibrationSource& source, const std::vector<size_t>& samples,
                               const QuantizeOptions& o, const ProgressFn& progress, size_t* used = nullptr) {
  std::vector<std::string> names;
  for (const Value* v : plan.activations) names.push_back(v->name());
  CalibrationResult calibration = calibrate(std::move(float_graph), names, source, samples, o, progress);
  if (used) *used = calibration.samples;
  return calibration.table();
}

// A quantized variant as octet runs it (optimized), built in memory from a fresh load:
// what mixed precision and the without-smoothing comparison measure.
std::shared_ptr<Graph> quantize_in_memory(const std::filesystem::path& path,
                                          const std::vector<SmoothingDecision>& smoothing,
                                          const QuantizeOptions& o, const ActivationTable& params,
                                          const PreparedWeights* prepared = nullptr) {
  Model m = load_prepared(path, smoothing);
  write_quantized_graph(*m.graph, plan_quantization(*m.graph, o), params, o, prepared);
  optimize(*m.graph);
  return std::shared_ptr<Graph>(m.graph.release());
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
std::vector<SmoothingDecision> decide(const QuantizeJob& job, Graph& graph, std::shared_ptr<const Graph> float_graph,
                                      const CalibrationSource& source, const std::vector<size_t>& samples,
                                      std::map<std::string, LayerInputStats>& input_stats) {
  constexpr size_t kKeptRows = 256;  // per activation, for the alpha search's error estimate
  const QuantizePlan plan = plan_quantization(graph, job.options);
  const std::vector<SmoothGroup> groups = find_smooth_groups(graph, plan);
  const auto stats = observe_channels(std::move(float_graph), groups, source, samples, kKeptRows,
                                      stage_progress(job, "channel statistics"));
  SmoothingRequest request{std::nullopt, std::numeric_limits<double>::infinity()};
  if (job.smoothing) request = *job.smoothing;
  std::vector<SmoothingDecision> decisions = decide_smoothing(graph, groups, stats, request, job.options);
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

QuantizeReport quantize_model(const QuantizeJob& job) {
  const auto start = std::chrono::steady_clock::now();
  QuantizeOptions o = job.options;  // mixed precision adds exclusions
  QuantizeReport report;
  report.options = o;
  report.model = job.model.string();
  report.output = job.output.string();
  report.explain = job.explain;
  const auto progress = [&](const char* label) { return stage_progress(job, label); };

  Model model = load_clean(job.model);  // rewritten in place, then written
  for (const std::string& w : model.warnings) report.notes.push_back("warning: " + w);
  const std::shared_ptr<const Graph> float_graph = shared(load_clean(job.model));
  report.float_file_bytes = model_files(job.model).bytes;
  report.float_weight_bytes = weight_bytes(*float_graph);

  std::optional<CalibrationSource> source;
  if (!job.calib.empty())
    source = CalibrationSource::open(job.calib, input_specs(required_inputs(*float_graph)), job.calib_samples);
  if (o.mode == Mode::Static && !source)
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

  // SmoothQuant: decide on the original float model, apply to the graph being rewritten
  // and to the float copy calibration runs on, and prove the copy still computes the same.
  std::vector<SmoothingDecision> smoothing;
  std::map<std::string, LayerInputStats> input_stats;
  std::shared_ptr<const Graph> calib_graph = float_graph;
  if (job.smoothing || job.explain)
    smoothing = decide(job, *model.graph, float_graph, *source, calib_idx, input_stats);
  if (job.smoothing) {
    SmoothingReport sr;
    sr.setting = alpha_setting(*job.smoothing);
    sr.min_outlier_ratio = job.smoothing->min_outlier_ratio;
    const std::vector<SmoothFold> folds = apply_smoothing(*model.graph, smoothing);
    size_t fold = 0;
    for (const SmoothingDecision& d : smoothing)
      sr.groups.push_back({d.group.activation, d.group.consumers, d.outlier_ratio, d.smoothed, d.alpha, d.reason,
                           d.smoothed ? folds[fold++].where : "", d.error_plain, d.error_smoothed});
    calib_graph = shared(load_prepared(job.model, smoothing));
    sr.max_relative_error = max_relative_error(Session(float_graph), Session(calib_graph), *source, first(calib_idx, 2));
    report.smoothing = std::move(sr);
  }

  QuantizePlan plan = plan_quantization(*model.graph, o);
  ActivationTable params;
  if (o.mode == Mode::Static)
    params = calibrate_plan(calib_graph, plan, *source, calib_idx, o, progress("calibrating"), &report.calibration_samples);

  // GPTQ: weights rounded against their inputs' Gram matrices on the (smoothed) float model.
  std::shared_ptr<const PreparedWeights> prepared;
  if (source && job.gptq) {
    GptqSummary g;
    prepared = gptq_weights(calib_graph, plan, *source, calib_idx, o.per_channel_weights, progress("GPTQ rounding"), g);
    report.gptq = GptqReport{g.layers, g.calibration_passes, g.error_nearest, g.error_gptq};
    for (const SkippedNode& s : g.skipped) report.notes.push_back("GPTQ: '" + s.node->name() + "' " + s.reason);
  }

  std::map<std::string, std::string> mixed_reasons;
  if (job.max_drop) {
    const Session float_session(float_graph);
    std::vector<std::string> layers;
    for (const QuantizedNode& q : plan.nodes) layers.push_back(q.node->name());
    auto drop = [&](const std::set<std::string>& float_layers) {
      QuantizeOptions variant = o;
      variant.exclude.insert(float_layers.begin(), float_layers.end());
      const Session s(quantize_in_memory(job.model, smoothing, variant, params, prepared.get()));
      return metric_drop(output_fidelity(float_session, s, *source, eval_idx), job.metric);
    };
    const MixedPrecisionResult mp = search_mixed_precision(layers, drop, *job.max_drop, progress("mixed precision"));
    MixedPrecisionReport mr{metric_name(job.metric), *job.max_drop, mp.drop_all_int8, mp.final_drop, mp.met, mp.evaluations, {}};
    for (const FloatLayer& l : mp.float_layers) {
      mr.float_layers.push_back({l.node, l.drop_alone});
      mixed_reasons[l.node] = l.reason;
      o.exclude.insert(l.node);
    }
    report.mixed_precision = std::move(mr);
    plan = plan_quantization(*model.graph, o);
  }
  for (const SkippedNode& s : plan.skipped) {
    auto why = mixed_reasons.find(s.node->name());
    report.skipped.push_back({s.node->name(), s.node->op_type(), why != mixed_reasons.end() ? why->second : s.reason});
  }
  RewriteResult rewrite = write_quantized_graph(*model.graph, plan, params, o, prepared.get());
  for (const SkippedNode& s : rewrite.skipped) report.skipped.push_back({s.node->name(), s.node->op_type(), s.reason});

  std::vector<std::string> problems = check_target_profile(*model.graph, o.target);
  if (!problems.empty()) {
    std::string all;
    for (const std::string& p : problems) all += "\n  " + p;
    fail("the quantized graph breaks the ", target_name(o.target), " profile, nothing written:", all);
  }
  const Bindings bindings = coverage_bindings(job, *model.graph, source ? &*source : nullptr);
  report.bindings = bindings_text(bindings);
  report.coverage = int8_coverage(*model.graph, bindings);
  report.quantized_weight_bytes = weight_bytes(*model.graph);
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const RewrittenLayer& l : rewrite.layers) {
    pairs.emplace_back(l.float_output, l.quantized_output->name());
    LayerReport lr{l.node, l.op, kind_name(l.kind), l.float_output, std::nullopt, std::nullopt, std::nullopt};
    if (const Node* n = model.graph->find_value(l.quantized_output->name())->producer())
      if (auto macs = node_macs(*n)) lr.macs = evaluate_macs(*macs, bindings);
    if (auto it = input_stats.find(l.node); it != input_stats.end()) lr.input = it->second;
    report.layers.push_back(lr);
  }

  for (const std::string& w : save_model(model, job.output, job.save)) report.notes.push_back(w);
  report.quantized_file_bytes = model_files(job.output).bytes;

  if (source) {
    // Layer SQNR on the graph as written (Q/DQ computed as float: the int8 kernels agree
    // with it to float rounding) against the float graph it was rewritten from (smoothed
    // when asked: the names line up); fidelity on the file as octet will run it, against
    // the original float model.
    std::shared_ptr<const Graph> quantized(std::move(model.graph));
    Session float_session(float_graph), rewritten_from(calib_graph), fake_quant(quantized);
    const auto sqnr = layer_sqnr(rewritten_from, fake_quant, pairs, *source, first(calib_idx, job.sqnr_samples));
    for (LayerReport& l : report.layers)
      if (auto it = sqnr.find(l.output); it != sqnr.end()) l.sqnr_db = it->second;
    Model written = load_model(job.output);
    optimize(*written.graph);
    Session runtime(std::shared_ptr<Graph>(std::move(written.graph)));
    report.fidelity = output_fidelity(float_session, runtime, *source, eval_idx);
    report.eval_samples = eval_idx.size();
    if (report.eval_in_sample)
      report.notes.push_back("fewer than 5 samples: fidelity is measured on the calibration samples themselves");
    if (report.smoothing) {
      // The same job without smoothing (and without mixed precision), for comparison.
      Model plain_model = load_clean(job.model);
      const QuantizePlan plain_plan = plan_quantization(*plain_model.graph, job.options);
      ActivationTable plain_params;
      if (o.mode == Mode::Static)
        plain_params = calibrate_plan(float_graph, plain_plan, *source, calib_idx, job.options, progress("calibrating without smoothing"));
      // GPTQ too when the job uses it, on the unsmoothed inputs: only smoothing differs.
      std::shared_ptr<const PreparedWeights> plain_prepared;
      if (job.gptq) {
        GptqSummary ignored;
        plain_prepared = gptq_weights(float_graph, plain_plan, *source, calib_idx, o.per_channel_weights,
                                      progress("GPTQ rounding without smoothing"), ignored);
      }
      const Session plain(quantize_in_memory(job.model, {}, job.options, plain_params, plain_prepared.get()));
      report.smoothing->fidelity_without = output_fidelity(float_session, plain, *source, eval_idx);
    }
  } else {
    report.notes.push_back("no samples given: pass --calib PATH to measure layer SQNR and output fidelity");
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace octet::quant
