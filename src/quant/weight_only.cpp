#include "quant/weight_only.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "analysis/model_files.h"
#include "ir/patch.h"
#include "octet/error.h"
#include "passes/pipeline.h"
#include "quant/awq.h"
#include "quant/block_quant.h"
#include "quant/calibration_data.h"
#include "quant/gptq.h"
#include "quant/quantize_plan.h"
#include "quant/smooth_fold.h"
#include "quant/raise_opset.h"

namespace octet::quant {
namespace {

// ||W - dequant(W_q)|| / ||W||: how much of the weight the rounding lost.
double relative_error(const float* w, const BlockQuantized& q) {
  double err = 0, norm = 0;
#pragma omp parallel for reduction(+ : err, norm) schedule(static)
  for (int64_t k = 0; k < q.K; ++k)
    for (int64_t n = 0; n < q.N; ++n) {
      const double x = w[k * q.N + n], d = x - dequantized(q, k, n);
      err += d * d, norm += x * x;
    }
  return norm > 0 ? std::sqrt(err / norm) : 0.0;
}

std::vector<const Value*> required_inputs(const Graph& g) {
  std::vector<const Value*> out;
  for (const Value* v : g.inputs())
    if (!v->is_initializer()) out.push_back(v);
  return out;
}

bool is_lm_head(const Node& n) { return n.output(0) && n.output(0)->is_graph_output(); }

// Why `n` stays float, or "" when it is quantized.
std::string keep_reason(const Node& n, const WeightOnlyOptions& o) {
  if (o.exclude.count(n.name()) || o.exclude.count(n.op_type())) return "excluded (--exclude)";
  const Value* b = n.input(1);
  if (!b || !b->constant() || b->is_graph_input()) return "B is not a constant";
  if (b->constant()->dtype() != DType::Float32) return "B is " + std::string(dtype_name(b->constant()->dtype())) + ", not float32";
  if (b->constant()->rank() != 2) return "B has rank " + std::to_string(b->constant()->rank()) + ", not 2";
  if (!n.input(0) || n.input(0)->type.dtype != DType::Float32) return "A is not float32";
  if (o.keep_lm_head && is_lm_head(n)) return "LM head kept float (--keep-lm-head)";
  return "";
}

// The model as the rewrite sees it: folded, no dead code or no-ops; still standard ops.
// Two loads of one file give the same node and value names.
Model load_clean(const std::filesystem::path& path) {
  Model m = load_model(path);
  OptimizeOptions clean;
  clean.level = 1;
  optimize(*m.graph, clean);
  return m;
}

struct AwqStatistics {
  std::vector<SmoothGroup> groups;
  std::map<std::string, ChannelStatsObserver> stats;
};

// AWQ's activation statistics: every weight group's input on the calibration samples, the
// float model run by octet. On a load of its own that the session owns, so the session
// drops the float weights it packed (SessionOptions::release_packed_weights) and all of it
// is gone before the graph to rewrite is loaded: peak memory stays that of one run.
AwqStatistics observe_awq(const WeightOnlyJob& job, WeightOnlyReport& report) {
  if (job.calib.empty()) fail("--method awq searches its scales on calibration samples: pass --calib PATH");
  constexpr size_t kKeptRows = 256;  // per activation: the rows the search measures output error on
  Model model = load_clean(job.model);
  Graph& g = *model.graph;
  QuantizeOptions plan_options;
  plan_options.exclude = job.options.exclude;
  plan_options.quantize_attention = false;
  plan_options.quantize_embeddings = false;
  for (const Node* n : g.nodes())
    if (job.options.keep_lm_head && is_lm_head(*n)) plan_options.exclude.insert(n->name());
  AwqStatistics out;
  out.groups = find_smooth_groups(g, plan_quantization(g, plan_options));
  const CalibrationSource source =
      CalibrationSource::open(job.calib, input_specs(required_inputs(g)), job.calib_samples);
  std::vector<size_t> samples(source.size());
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = i;
  report.calibration_samples = samples.size();
  out.stats = observe_channels(std::shared_ptr<Graph>(model.graph.release()), out.groups, source, samples,
                               kKeptRows, job.progress ? stderr_progress("AWQ statistics") : ProgressFn{});
  return out;
}

// GPTQ's statistics: the Gram matrix of every quantized MatMul's input on the calibration
// samples, from the float model on a load of its own (dropped before the graph to rewrite
// is loaded), and which input each MatMul reads, by node name (a load's node names are the
// same on every load; AWQ keeps them).
struct GptqStatistics {
  std::map<std::string, GramObserver> grams;  // by input value name
  std::map<std::string, std::string> input_of;  // MatMul node name -> input value name
};

GptqStatistics observe_gptq(const WeightOnlyJob& job, WeightOnlyReport& report) {
  if (job.calib.empty()) fail("--method gptq rounds against calibration activations: pass --calib PATH");
  Model model = load_clean(job.model);
  const Graph& g = *model.graph;
  GptqStatistics out;
  std::vector<std::pair<std::string, int64_t>> inputs;
  for (const Node* n : g.nodes()) {
    if (!n->domain().empty() || n->op_type() != "MatMul" || !keep_reason(*n, job.options).empty()) continue;
    const std::string& x = n->input(0)->name();
    out.input_of[n->name()] = x;
    const int64_t k = n->input(1)->constant()->shape()[0];
    if (std::none_of(inputs.begin(), inputs.end(), [&](const auto& p) { return p.first == x; })) inputs.emplace_back(x, k);
  }
  const CalibrationSource source =
      CalibrationSource::open(job.calib, input_specs(required_inputs(g)), job.calib_samples);
  std::vector<size_t> samples(source.size());
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = i;
  report.calibration_samples = samples.size();
  const Session session(std::shared_ptr<Graph>(model.graph.release()));  // drops what it packs
  ProgressFn progress = job.progress ? stderr_progress("GPTQ statistics") : ProgressFn{};
  size_t done = 0;
  out.grams = observe_grams(session, inputs, source, samples, [&] {
    if (progress) progress(++done, samples.size());
  });
  return out;
}

// The Gram matrix of node's input as the rewritten graph feeds it: AWQ divided input
// channel i by s_i, so H_ij becomes H_ij / (s_i s_j).
std::vector<double> gram_for(const GptqStatistics& st, const std::string& node,
                             const std::map<std::string, std::vector<float>>& awq_scales) {
  auto in = st.input_of.find(node);
  if (in == st.input_of.end()) return {};
  const GramObserver& g = st.grams.at(in->second);
  if (g.rows() == 0) return {};
  std::vector<double> h = g.matrix();
  if (auto s = awq_scales.find(node); s != awq_scales.end()) {
    const int64_t k = g.k();
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < k; ++j) h[static_cast<size_t>(i * k + j)] /= static_cast<double>(s->second[i]) * s->second[j];
  }
  return h;
}

// The scale search on the graph to rewrite, and the scales folded into it; returns the
// scales by reader node name.
std::map<std::string, std::vector<float>> apply_awq(const WeightOnlyJob& job, const AwqStatistics& a, Graph& g,
                                                    WeightOnlyReport& report) {
  const std::vector<SmoothingDecision> decisions =
      search_awq_scales(g, a.groups, a.stats, {job.options.bits, job.options.block_size(), job.options.symmetric});
  const std::vector<SmoothFold> folds = apply_smoothing(g, decisions);
  size_t fold = 0;
  std::map<std::string, std::vector<float>> scales;
  for (const SmoothingDecision& d : decisions) {
    report.awq.push_back({d.group.activation, d.group.consumers.size(), d.alpha, d.error_plain.value_or(0),
                          d.error_smoothed.value_or(0), d.smoothed ? folds[fold++].where : ""});
    if (d.smoothed)
      for (const std::string& node : d.group.consumers) scales[node] = d.scale;
  }
  return scales;
}

}  // namespace

int parse_weight_bits(const std::string& s) {
  if (s == "int4" || s == "4") return 4;
  if (s == "int8" || s == "8") return 8;
  fail("--weights must be int4 or int8, got '", s, "'");
}

WeightOnlyReport quantize_weights_only(const WeightOnlyJob& job) {
  const auto start = std::chrono::steady_clock::now();
  const WeightOnlyOptions& o = job.options;
  const int64_t block = o.block_size();
  if (block < 16 || (block & (block - 1)) != 0)
    fail("--block must be a power of 2 of at least 16 (MatMulNBits' rule), got ", block);
  if (o.target == Target::TensorRT && !o.symmetric)
    fail("--target tensorrt takes symmetric weights only (zero points 0): drop --asymmetric");
  WeightOnlyReport report;
  report.options = o;
  report.model = job.model.string();
  report.output = job.output.string();
  report.float_file_bytes = model_files(job.model).bytes;

  std::optional<GptqStatistics> gptq;
  if (o.gptq) gptq = observe_gptq(job, report);
  std::optional<AwqStatistics> awq;
  if (o.awq) awq = observe_awq(job, report);
  Model model = load_clean(job.model);
  for (const std::string& w : model.warnings) report.notes.push_back("warning: " + w);
  Graph& g = *model.graph;
  std::map<std::string, std::vector<float>> awq_scales;
  if (awq) {
    awq_scales = apply_awq(job, *awq, g, report);
    awq.reset();  // the kept rows: up to 256 per activation
  }
  std::map<const Value*, int> readers;  // a weight several MatMuls read keeps nearest rounding
  for (Node* n : g.nodes())
    if (n->domain().empty() && n->op_type() == "MatMul" && keep_reason(*n, o).empty()) ++readers[n->input(1)];
  const bool nbits = o.target == Target::Ort;
  if (nbits) {
    g.opset_imports.emplace("com.microsoft", 1);
    report.form = "com.microsoft.MatMulNBits";
  } else {
    for (const std::string& note : raise_opset_to_21(g, job.model.string(), "blocked DequantizeLinear needs it")) report.notes.push_back(note);
    report.form = "DequantizeLinear(axis 0, block_size) + MatMul (opset 21)";
  }

  // One quantized copy per weight, shared by every MatMul reading it.
  struct Written {
    std::vector<Value*> nbits_inputs;  // MatMulNBits inputs 1..3
    Value* dequantized = nullptr;      // the DequantizeLinear output
    int64_t K = 0, N = 0;
  };
  std::map<const Value*, Written> done;
  GraphPatch patch(g);
  for (Node* n : g.nodes()) {
    if (!n->domain().empty() || n->op_type() != "MatMul") continue;
    if (std::string why = keep_reason(*n, o); !why.empty()) {
      report.kept.emplace_back(n->name(), why);
      continue;
    }
    Value* b = n->input(1);
    auto it = done.find(b);
    if (it == done.end()) {
      const Tensor& w = *b->constant();
      const int64_t K = w.shape()[0], N = w.shape()[1];
      BlockQuantized q = quantize_blocks_rtn(w.data<float>(), K, N, o.bits, block, o.symmetric);
      if (gptq && readers[b] == 1) {
        const std::vector<double> h = gram_for(*gptq, n->name(), awq_scales);
        if (!h.empty()) {
          gptq_round_blocks(w.data<float>(), h, q);
          ++report.gptq_layers;
        }
      }
      report.layers.push_back({n->name(), b->name(), K, N, is_lm_head(*n), relative_error(w.data<float>(), q)});
      Written wr;
      wr.K = K, wr.N = N;
      const std::string stem = b->name() + (o.bits == 4 ? "_q4" : "_q8");
      if (nbits) {
        NbitsTensors t = to_matmul_nbits(q);
        wr.nbits_inputs = {patch.add_initializer(stem, std::move(t.b)),
                           patch.add_initializer(stem + "_scales", std::move(t.scales))};
        if (t.zero_points) wr.nbits_inputs.push_back(patch.add_initializer(stem + "_zero_points", std::move(*t.zero_points)));
      } else {
        BlockedDq t = to_blocked_dq(q);
        std::vector<Value*> ins = {patch.add_initializer(stem, std::move(t.q)),
                                   patch.add_initializer(stem + "_scales", std::move(t.scales))};
        if (t.zero_points) ins.push_back(patch.add_initializer(stem + "_zero_points", std::move(*t.zero_points)));
        wr.dequantized = patch.add_node("DequantizeLinear", ins, 1,
                                        {Attribute::make_int("axis", 0), Attribute::make_int("block_size", block)}, "",
                                        stem + "_dequantize")
                             ->output(0);
      }
      it = done.emplace(b, std::move(wr)).first;
    } else {
      report.layers.push_back({n->name(), b->name(), it->second.K, it->second.N, is_lm_head(*n), 0.0});
    }
    const Written& wr = it->second;
    if (nbits) {
      std::vector<Value*> ins = {n->input(0)};
      ins.insert(ins.end(), wr.nbits_inputs.begin(), wr.nbits_inputs.end());
      Node* mm = patch.add_node("MatMulNBits", ins, 1,
                                {Attribute::make_int("K", wr.K), Attribute::make_int("N", wr.N),
                                 Attribute::make_int("bits", o.bits), Attribute::make_int("block_size", block)},
                                "com.microsoft", n->name() + "_nbits");
      patch.replace_uses(n->output(0), mm->output(0));
      patch.remove_node(n);
    } else {
      patch.set_input(n, 1, wr.dequantized);
    }
  }
  patch.apply();
  {
    OptimizeOptions clean;  // drops the float weights nothing reads now
    clean.level = 1;
    optimize(g, clean);
  }
  for (const std::string& w : save_model(model, job.output, job.save)) report.notes.push_back(w);
  report.quantized_file_bytes = model_files(job.output).bytes;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

std::string WeightOnlyReport::to_text() const {
  std::string s;
  char line[256];
  std::snprintf(line, sizeof line, "weight-only int%d (%s), blocks of %lld along K, %s, target %s\n", options.bits,
                options.awq ? (options.gptq ? "AWQ + GPTQ" : "AWQ") : (options.gptq ? "GPTQ" : "RTN"),
                static_cast<long long>(options.block_size()), options.symmetric ? "symmetric" : "asymmetric",
                target_name(options.target));
  s += line;
  s += "  written as " + form + "\n";
  std::snprintf(line, sizeof line, "  file: %.1f MiB -> %.1f MiB (%.2fx), %.1f s\n", float_file_bytes / 1048576.0,
                quantized_file_bytes / 1048576.0,
                quantized_file_bytes ? static_cast<double>(float_file_bytes) / quantized_file_bytes : 0.0, seconds);
  s += line;
  std::snprintf(line, sizeof line, "  %zu MatMuls quantized, %zu kept float\n", layers.size(), kept.size());
  s += line;
  double worst = 0, sum = 0;
  for (const WeightOnlyLayer& l : layers) worst = std::max(worst, l.rel_error), sum += l.rel_error;
  if (!layers.empty()) {
    std::snprintf(line, sizeof line, "  weight error ||W - Wq|| / ||W||: mean %.4f, worst %.4f\n", sum / layers.size(), worst);
    s += line;
  }
  for (const WeightOnlyLayer& l : layers)
    if (l.lm_head) {
      std::snprintf(line, sizeof line, "  LM head %s [%lldx%lld] quantized (error %.4f; --keep-lm-head keeps it float)\n",
                    l.node.c_str(), static_cast<long long>(l.K), static_cast<long long>(l.N), l.rel_error);
      s += line;
    }
  if (options.awq) {
    size_t scaled = 0;
    double rtn = 0, awq_err = 0;
    for (const AwqGroup& a : awq) scaled += a.alpha > 0, rtn += a.error_rtn, awq_err += a.error_awq;
    std::snprintf(line, sizeof line,
                  "  AWQ on %zu calibration samples: %zu of %zu weight groups scaled; output error on kept rows "
                  "%.4g (RTN) -> %.4g\n",
                  calibration_samples, scaled, awq.size(), rtn, awq_err);
    s += line;
  }
  if (options.gptq) {
    std::snprintf(line, sizeof line,
                  "  GPTQ: %zu weights rounded against their inputs' Gram matrices on %zu calibration samples\n",
                  gptq_layers, calibration_samples);
    s += line;
  }
  // Kept nodes by reason (a decoder has two activation x activation MatMuls per layer).
  std::map<std::string, std::vector<std::string>> by_reason;
  for (const auto& [node, why] : kept) by_reason[why].push_back(node);
  for (const auto& [why, nodes] : by_reason) {
    s += "  kept float (" + std::to_string(nodes.size()) + "): " + why + ": " + nodes[0];
    if (nodes.size() > 1) s += ", " + nodes[1];
    s += nodes.size() > 2 ? ", ...\n" : "\n";
  }
  for (const std::string& n : notes) s += "  note: " + n + "\n";
  return s;
}

nlohmann::json WeightOnlyReport::to_json() const {
  nlohmann::json j;
  j["mode"] = "weight-only";
  j["bits"] = options.bits;
  j["block"] = options.block_size();
  j["symmetric"] = options.symmetric;
  j["target"] = target_name(options.target);
  j["form"] = form;
  j["model"] = model;
  j["output"] = output;
  j["float_file_bytes"] = float_file_bytes;
  j["quantized_file_bytes"] = quantized_file_bytes;
  j["seconds"] = seconds;
  j["layers"] = nlohmann::json::array();
  for (const WeightOnlyLayer& l : layers)
    j["layers"].push_back({{"node", l.node}, {"weight", l.weight}, {"K", l.K}, {"N", l.N}, {"lm_head", l.lm_head},
                           {"relative_error", l.rel_error}});
  j["kept"] = nlohmann::json::array();
  for (const auto& [node, why] : kept) j["kept"].push_back({{"node", node}, {"reason", why}});
  j["notes"] = notes;
  j["method"] = options.awq ? (options.gptq ? "awq-gptq" : "awq") : (options.gptq ? "gptq" : "rtn");
  j["gptq_layers"] = gptq_layers;
  if (options.awq || options.gptq) j["calibration_samples"] = calibration_samples;
  if (options.awq) {
    j["awq"] = nlohmann::json::array();
    for (const AwqGroup& a : awq)
      j["awq"].push_back({{"activation", a.activation}, {"readers", a.readers}, {"alpha", a.alpha},
                          {"error_rtn", a.error_rtn}, {"error_awq", a.error_awq}, {"folded", a.folded}});
  }
  return j;
}

}  // namespace octet::quant
