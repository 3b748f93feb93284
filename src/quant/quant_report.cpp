#include "quant/quant_report.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analysis/macs.h"

namespace octet::quant {
namespace {

bool from_dequantize(const Value* v) {
  return v && v->producer() && v->producer()->op_type() == "DequantizeLinear" && v->producer()->domain().empty();
}

bool computes_in_int8(const Node& n) {
  static const std::set<std::string> integer_ops = {"MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv"};
  if (n.domain() == "octet") return n.op_type() == "QMatMul" || n.op_type() == "QAttention";
  if (!n.domain().empty()) return false;
  if (integer_ops.count(n.op_type())) return true;
  if (n.op_type() == "MatMul" || n.op_type() == "Gemm" || n.op_type() == "Conv")
    return from_dequantize(n.input(0)) && from_dequantize(n.input(1));
  return false;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json fidelity_json(const std::vector<OutputFidelity>& fidelity) {
  nlohmann::json fid = nlohmann::json::array();
  for (const OutputFidelity& f : fidelity) {
    nlohmann::json e = {{"output", f.name}, {"cosine", f.cosine}, {"max_abs_error", f.max_abs_error}, {"mse", f.mse}, {"samples", f.samples}};
    e["top1_agreement"] = f.top1_agreement ? nlohmann::json(*f.top1_agreement) : nlohmann::json(nullptr);
    fid.push_back(e);
  }
  return fid;
}

void fidelity_text(std::ostringstream& o, const std::vector<OutputFidelity>& fidelity) {
  for (const OutputFidelity& f : fidelity) {
    o << "    " << f.name << ": cosine " << fmt("%.5f", f.cosine) << ", max abs error " << fmt("%.4g", f.max_abs_error);
    if (f.top1_agreement) o << ", top-1 agreement " << fmt("%.1f%%", 100 * *f.top1_agreement);
    o << "\n";
  }
}

std::string megabytes(uint64_t b) { return fmt("%.3f MB", static_cast<double>(b) / 1e6); }

}  // namespace

Coverage int8_coverage(const Graph& graph, const Bindings& bindings) {
  Coverage c;
  for (const Node* n : graph.nodes()) {
    auto macs = node_macs(*n);
    if (!macs) continue;
    auto value = evaluate_macs(*macs, bindings);
    if (!value || *value == 0) continue;
    c.total_macs += *value;
    if (computes_in_int8(*n)) c.int8_macs += *value;
    else c.float_matmuls.push_back(n->describe() + ": " + std::to_string(*value) + " MACs");
  }
  return c;
}

uint64_t weight_bytes(const Graph& graph) {
  uint64_t total = 0;
  for (const Value* v : graph.initializers())
    if (v->constant()) total += v->constant()->bytes();
  return total;
}

nlohmann::json QuantizeReport::to_json() const {
  using nlohmann::json;
  json j;
  j["model"] = model;
  j["output"] = output;
  j["options"] = {{"mode", mode_name(options.mode)},
                  {"target", target_name(options.target)},
                  {"calibration", calibration_name(options.calibration)},
                  {"percentile", options.percentile},
                  {"activation_type", dtype_name(options.activation_type)},
                  {"per_channel_weights", options.per_channel_weights},
                  {"attention", options.quantize_attention ? (options.row_probabilities ? "int8" : "int8-tensor") : "fp32"},
                  {"embeddings", options.quantize_embeddings},
                  {"exclude", std::vector<std::string>(options.exclude.begin(), options.exclude.end())},
                  {"mode_reason", mode_reason}};
  j["sizes"] = {{"float_file_bytes", float_file_bytes},
                {"quantized_file_bytes", quantized_file_bytes},
                {"file_ratio", float_file_bytes ? static_cast<double>(quantized_file_bytes) / static_cast<double>(float_file_bytes) : 0.0},
                {"float_weight_bytes", float_weight_bytes},
                {"quantized_weight_bytes", quantized_weight_bytes}};
  j["coverage"] = {{"bindings", bindings},
                   {"total_macs", coverage.total_macs},
                   {"int8_macs", coverage.int8_macs},
                   {"int8_share", coverage.share()},
                   {"float_matmuls", coverage.float_matmuls}};
  j["calibration"] = {{"source", calibration_source},
                      {"samples", calibration_samples},
                      {"eval_samples", eval_samples},
                      {"eval_in_sample", eval_in_sample}};
  json layers = json::array();
  for (const LayerReport& l : this->layers) {
    json e = {{"node", l.node}, {"op", l.op}, {"kind", l.kind}, {"output", l.output}};
    e["sqnr_db"] = l.sqnr_db ? json(*l.sqnr_db) : json(nullptr);
    e["macs"] = l.macs ? json(*l.macs) : json(nullptr);
    if (l.input)
      e["input"] = {{"min", l.input->min}, {"max", l.input->max}, {"outlier_ratio", finite_or_null(l.input->outlier_ratio)},
                    {"smooth_alpha", l.input->smooth_alpha ? json(*l.input->smooth_alpha) : json(nullptr)},
                    {"smooth_scale_min", l.input->scale_min}, {"smooth_scale_max", l.input->scale_max}};
    layers.push_back(e);
  }
  j["layers"] = layers;
  json skipped_json = json::array();
  for (const SkippedReport& s : skipped) skipped_json.push_back({{"node", s.node}, {"op", s.op}, {"reason", s.reason}});
  j["float_nodes"] = skipped_json;
  j["fidelity"] = fidelity_json(fidelity);
  if (smoothing) {
    json groups = json::array();
    for (const SmoothGroupReport& g : smoothing->groups)
      groups.push_back({{"activation", g.activation}, {"consumers", g.consumers},
                        {"outlier_ratio", finite_or_null(g.outlier_ratio)}, {"smoothed", g.smoothed},
                        {"alpha", g.smoothed ? json(g.alpha) : json(nullptr)}, {"reason", g.reason}, {"fold", g.where},
                        {"error_plain", g.error_plain ? json(*g.error_plain) : json(nullptr)},
                        {"error_smoothed", g.error_smoothed ? json(*g.error_smoothed) : json(nullptr)}});
    j["smoothing"] = {{"setting", smoothing->setting}, {"min_outlier_ratio", smoothing->min_outlier_ratio},
                      {"groups", groups}, {"max_relative_error", smoothing->max_relative_error},
                      {"fidelity_without_smoothing", fidelity_json(smoothing->fidelity_without)}};
  }
  if (gptq)
    j["gptq"] = {{"layers", gptq->layers}, {"calibration_passes", gptq->calibration_passes},
                 {"output_error_nearest", gptq->error_nearest}, {"output_error_gptq", gptq->error_gptq}};
  if (mixed_precision) {
    json layers_json = json::array();
    for (const FloatLayerReport& l : mixed_precision->float_layers)
      layers_json.push_back({{"node", l.node}, {"drop_alone", l.drop_alone}});
    j["mixed_precision"] = {{"metric", mixed_precision->metric}, {"max_drop", mixed_precision->max_drop},
                            {"drop_all_int8", mixed_precision->drop_all_int8},
                            {"final_drop", mixed_precision->final_drop}, {"met", mixed_precision->met},
                            {"evaluations", mixed_precision->evaluations}, {"float_layer_count", layers_json.size()},
                            {"float_layers", layers_json}};
  }
  j["notes"] = notes;
  j["seconds"] = seconds;
  return j;
}

std::string QuantizeReport::to_text() const {
  std::ostringstream o;
  o << "quantized " << model << " -> " << output << " (" << mode_name(options.mode) << ", target "
    << target_name(options.target) << ", " << (options.mode == Mode::Static ? calibration_name(options.calibration) : "no")
    << " calibration)\n";
  if (!mode_reason.empty()) o << "  mode     " << mode_reason << "\n";
  o << "  file     " << megabytes(float_file_bytes) << " -> " << megabytes(quantized_file_bytes);
  if (float_file_bytes)
    o << fmt(" (%.3fx)", static_cast<double>(quantized_file_bytes) / static_cast<double>(float_file_bytes));
  o << "\n  weights  " << megabytes(float_weight_bytes) << " -> " << megabytes(quantized_weight_bytes) << "\n";
  o << "  int8 MACs " << fmt("%.2f%%", 100 * coverage.share()) << " of " << coverage.total_macs << " (" << bindings << ")\n";
  if (calibration_samples) o << "  calibration: " << calibration_samples << " samples from " << calibration_source << "\n";
  if (!layers.empty()) {
    o << "\n";
    char line[256];
    std::snprintf(line, sizeof line, "  %-40s %-12s %-10s %10s", "layer", "op", "kind", "SQNR dB");
    o << line;
    if (explain) o << "  input range            outlier  alpha  smoothing scale";
    o << "\n";
    for (const LayerReport& l : layers) {
      std::snprintf(line, sizeof line, "  %-40.40s %-12.12s %-10s %10s", l.node.c_str(), l.op.c_str(), l.kind.c_str(),
                    l.sqnr_db ? fmt("%.1f", *l.sqnr_db).c_str() : "-");
      o << line;
      if (explain && l.input) {
        const LayerInputStats& in = *l.input;
        std::snprintf(line, sizeof line, "  [%9.3g, %9.3g]  %7.1f  %5s  %s", in.min, in.max, in.outlier_ratio,
                      in.smooth_alpha ? fmt("%.1f", *in.smooth_alpha).c_str() : "-",
                      in.smooth_alpha ? (fmt("%.3g", in.scale_min) + " .. " + fmt("%.3g", in.scale_max)).c_str() : "-");
        o << line;
      }
      o << "\n";
    }
  }
  if (!skipped.empty()) {
    o << "\n  kept in float:\n";
    for (const SkippedReport& s : skipped) o << "    " << s.node << " (" << s.op << "): " << s.reason << "\n";
  }
  if (!fidelity.empty()) {
    o << "\n  fidelity against float on " << eval_samples << (eval_in_sample ? " calibration" : " held-out")
      << " samples:\n";
    fidelity_text(o, fidelity);
  }
  if (smoothing) {
    size_t smoothed = 0;
    for (const SmoothGroupReport& g : smoothing->groups) smoothed += g.smoothed;
    o << "\n  SmoothQuant " << smoothing->setting << ": " << smoothed << " of " << smoothing->groups.size()
      << " input activations smoothed; smoothed float model vs original: max relative error "
      << fmt("%.2g", smoothing->max_relative_error) << "\n";
    for (const SmoothGroupReport& g : smoothing->groups)
      if (g.smoothed)
        o << "    " << g.activation << " (outlier ratio " << fmt("%.1f", g.outlier_ratio) << ", alpha " << fmt("%.1f", g.alpha)
          << "): 1/s into " << g.where << "\n";
    if (!smoothing->fidelity_without.empty()) {
      o << "  the same quantization without SmoothQuant:\n";
      fidelity_text(o, smoothing->fidelity_without);
    }
  }
  if (gptq && gptq->layers) {
    o << "\n  GPTQ rounding: " << gptq->layers << " weights; their output error (H-weighted, relative) "
      << fmt("%.3g", gptq->error_gptq) << " against " << fmt("%.3g", gptq->error_nearest) << " rounded to nearest ("
      << gptq->calibration_passes << " pass(es) over the calibration samples)\n";
  }
  if (mixed_precision) {
    const MixedPrecisionReport& m = *mixed_precision;
    o << "\n  mixed precision (--max-drop " << fmt("%g", m.max_drop) << ", metric " << m.metric << "): all int8 drops "
      << fmt("%.4g", m.drop_all_int8) << "; " << m.float_layers.size() << " layer(s) kept float give "
      << fmt("%.4g", m.final_drop) << (m.met ? " (target met)" : " (target NOT met)") << ", " << m.evaluations
      << " evaluations\n";
    for (const FloatLayerReport& l : m.float_layers)
      o << "    " << l.node << ": drop " << fmt("%.4g", l.drop_alone) << " when quantized alone\n";
  }
  for (const std::string& n : notes) o << "  note: " << n << "\n";
  return o.str();
}

}  // namespace octet::quant
