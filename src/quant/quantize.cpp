#include "quant/quantize.h"

#include <chrono>

#include "analysis/macs.h"
#include "analysis/model_files.h"
#include "passes/pipeline.h"
#include "quant/calibrate.h"
#include "quant/calibration_data.h"
#include "quant/evaluate.h"
#include "quant/qdq_rewrite.h"
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

}  // namespace

QuantizeReport quantize_model(const QuantizeJob& job) {
  const auto start = std::chrono::steady_clock::now();
  const QuantizeOptions& o = job.options;
  QuantizeReport report;
  report.options = o;
  report.model = job.model.string();
  report.output = job.output.string();

  Model model = load_model(job.model);  // rewritten in place, then written
  clean_float_graph(*model.graph, job.model);
  std::shared_ptr<Graph> float_copy(load_model(job.model).graph.release());
  clean_float_graph(*float_copy, job.model);
  std::shared_ptr<const Graph> float_graph = float_copy;
  report.float_file_bytes = model_files(job.model).bytes;
  report.float_weight_bytes = weight_bytes(*float_graph);

  std::optional<CalibrationSource> source;
  if (!job.calib.empty())
    source = CalibrationSource::open(job.calib, input_specs(required_inputs(*float_graph)), job.calib_samples);
  if (o.mode == Mode::Static && !source)
    fail("static quantization needs calibration samples: pass --calib PATH (or --mode dynamic)");
  std::vector<size_t> calib_idx, eval_idx;
  if (source) {
    std::tie(calib_idx, eval_idx) = split_holdout(source->size(), job.holdout);
    report.calibration_source = source->describe();
    report.eval_in_sample = eval_idx.empty();
    if (eval_idx.empty()) eval_idx = calib_idx;
  }

  QuantizePlan plan = plan_quantization(*model.graph, o);
  ActivationTable params;
  if (o.mode == Mode::Static) {
    std::vector<std::string> names;
    for (const Value* v : plan.activations) names.push_back(v->name());
    CalibrationResult calibration = calibrate(float_graph, names, *source, calib_idx, o,
                                              job.progress ? stderr_progress("calibrating") : ProgressFn{});
    params = calibration.table();
    report.calibration_samples = calibration.samples;
  }
  for (const SkippedNode& s : plan.skipped) report.skipped.push_back({s.node->name(), s.node->op_type(), s.reason});
  RewriteResult rewrite = write_quantized_graph(*model.graph, plan, params, o);
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
    LayerReport lr{l.node, l.op, kind_name(l.kind), l.float_output, std::nullopt, std::nullopt};
    if (const Node* n = model.graph->find_value(l.quantized_output->name())->producer())
      if (auto macs = node_macs(*n)) lr.macs = macs->evaluate(bindings);
    report.layers.push_back(lr);
  }

  for (const std::string& w : save_model(model, job.output, job.save)) report.notes.push_back(w);
  report.quantized_file_bytes = model_files(job.output).bytes;

  if (source) {
    // Layer SQNR on the graph as written (Q/DQ computed as float: the int8 kernels agree
    // with it to float rounding), fidelity on the file as octet will run it.
    std::shared_ptr<const Graph> quantized(std::move(model.graph));
    Session float_session(float_graph), fake_quant(quantized);
    const auto sqnr = layer_sqnr(float_session, fake_quant, pairs, *source, first(calib_idx, job.sqnr_samples));
    for (LayerReport& l : report.layers)
      if (auto it = sqnr.find(l.output); it != sqnr.end()) l.sqnr_db = it->second;
    Model written = load_model(job.output);
    optimize(*written.graph);
    Session runtime(std::shared_ptr<Graph>(std::move(written.graph)));
    report.fidelity = output_fidelity(float_session, runtime, *source, eval_idx);
    report.eval_samples = eval_idx.size();
    if (report.eval_in_sample)
      report.notes.push_back("fewer than 5 samples: fidelity is measured on the calibration samples themselves");
  } else {
    report.notes.push_back("no samples given: pass --calib PATH to measure layer SQNR and output fidelity");
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace octet::quant
