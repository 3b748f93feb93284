#include "passes/pipeline.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>

#include "passes/rewrites/rewrites.h"

namespace octet {

const PassStats* OptimizeReport::find(const std::string& pass) const {
  for (const PassStats& p : passes)
    if (p.name == pass) return &p;
  return nullptr;
}

int64_t OptimizeReport::detail(const std::string& what) const {
  int64_t sum = 0;
  for (const PassStats& p : passes) {
    auto it = p.details.find(what);
    if (it != p.details.end()) sum += it->second;
  }
  return sum;
}

std::string OptimizeReport::to_text() const {
  std::ostringstream out;
  out << "nodes " << nodes_before << " -> " << nodes_after << ", initializers " << initializers_before << " -> "
      << initializers_after << ", " << iterations << " round(s)" << (converged ? "" : " (stopped at the limit)")
      << "\n";
  for (const PassStats& p : passes) {
    if (p.rewrites == 0) continue;
    out << "  " << p.name << ": " << p.rewrites << " rewrite(s), nodes -" << p.nodes_removed << " +" << p.nodes_added;
    if (p.initializers_added || p.initializers_removed)
      out << ", initializers -" << p.initializers_removed << " +" << p.initializers_added;
    if (!p.details.empty()) {
      out << " (";
      bool first = true;
      for (const auto& [what, n] : p.details) {
        out << (first ? "" : ", ") << what << " " << n;
        first = false;
      }
      out << ")";
    }
    out << "\n";
  }
  for (const std::string& w : warnings) out << "  warning: " << w << "\n";
  return out.str();
}

nlohmann::json OptimizeReport::to_json() const {
  nlohmann::json j;
  j["nodes_before"] = nodes_before;
  j["nodes_after"] = nodes_after;
  j["initializers_before"] = initializers_before;
  j["initializers_after"] = initializers_after;
  j["iterations"] = iterations;
  j["converged"] = converged;
  j["passes"] = nlohmann::json::array();
  for (const PassStats& p : passes)
    j["passes"].push_back({{"name", p.name},
                           {"runs", p.runs},
                           {"changed_runs", p.changed_runs},
                           {"rewrites", p.rewrites},
                           {"nodes_added", p.nodes_added},
                           {"nodes_removed", p.nodes_removed},
                           {"initializers_added", p.initializers_added},
                           {"initializers_removed", p.initializers_removed},
                           {"details", p.details},
                           {"seconds", p.seconds}});
  j["warnings"] = warnings;
  return j;
}

Pipeline Pipeline::standard(const OptimizeOptions& options) {
  using namespace passes;
  std::vector<Pass> list;
  if (options.level >= 1) {
    // Folding first so fusions see constants as initializers; dead code right after so a
    // dead reader never counts as a second use of a value a fusion wants to swallow.
    list = {eliminate_noops(), fold_constants(), fold_shape_values(), eliminate_dead_code()};
  }
  if (options.level >= 2) {
    // LayerNorm before RMSNorm: a LayerNorm's x - mean part is itself an RMSNorm pattern.
    // Quantized matmuls before MatMul+bias, which would otherwise take their bias Add.
    // Attention after the projections became octet.MatMulBias (its Q/K/V are their
    // outputs), then its Q/K/V packed (slices read in place, three projections merged)
    // before the epilogue fusion could give a projection a residual; a LayerScale Mul after a
    // projection folds into its weights before the epilogue, so the residual Add behind it
    // can fold too; the epilogue last: it folds the Gelus and MatMulBias nodes the
    // others wrote. Quantized embedding rows first: independent of the rest.
    // BatchNormalization folds first so the Conv it went into can still become a MatMul.
    for (Pass p : {fold_batch_norm(), gather_quantized_rows(), fuse_gelu_erf(), fuse_gelu_tanh(), fuse_layer_norm(), fuse_rms_norm(), fuse_rotary(), fuse_blocked_dq_matmul(), fuse_qdq_matmul(),
                   conv_patches_to_matmul(), fuse_matmul_bias(), fuse_attention(), fuse_grouped_attention(), fuse_bmm_attention(), fuse_qbmm_attention(),
                   fuse_attention_slices(),
                   fuse_attention_qkv(), fuse_qattention_qkv(), fold_matmul_output_scale(), fuse_matmul_epilogue()})
      list.push_back(std::move(p));
  }
  std::vector<Pass> finishing;
  // Transposes become Reshapes only once no fusion can still want them: fuse_attention
  // matches head-split Transposes that, at one token or one head, move only size-1 axes.
  // A SmoothQuant Mul no producer took (fold_matmul_output_scale) goes into its QMatMul
  // readers' row quantization.
  // LayerNorms quantize for their QMatMuls once those are final (merged, a residual
  // folded in: a float reader of the LayerNorm) and dead-code elimination has removed the
  // QuantizeLinear nodes fuse_qdq_matmul left reading them.
  // QMatMuls whose only readers are such QMatMuls then write their 8-bit A too.
  // A per-row LayerNormQuantize of a QMatMul's float output then joins that QMatMul's
  // epilogue (both final by now).
  // Sibling products of one input merge once no fusion can want them apart (a bias Add,
  // a fused attention's Q/K/V); SiLU(gate) * up then becomes one octet.SwiGLU, reading
  // the merged gate/up product whole (its Split gone), and a MatMulNBits whose Split is
  // left (q/k/v) writes the parts itself.
  // Common subexpressions last (each layer's copy of the rotary table slicing, ...): a
  // fusion may want its own single-reader copy; the copies it leaves then go as dead code.
  if (options.level >= 2)
    finishing = {merge_sibling_matmuls(), fuse_swiglu(), fuse_nbits_split(), transpose_to_reshape(), fold_smoothing_mul(), fuse_layer_norm_quantize(), fuse_qmatmul_output_quantize(),
                 fuse_qmatmul_layer_norm(),
                 eliminate_common_subexpressions(), eliminate_dead_code()};
  return Pipeline(std::move(list), std::move(finishing));
}

namespace {

void verify_or_fail(const Graph& g, const std::string& pass) {
  std::vector<std::string> problems = verify_graph(g);
  if (problems.empty()) return;
  std::string all;
  for (const std::string& p : problems) all += "\n  " + p;
  fail("internal error: pass ", pass, " left an invalid graph:", all);
}

}  // namespace

OptimizeReport Pipeline::run(Graph& graph, const OptimizeOptions& options) const {
  OptimizeReport report;
  report.nodes_before = static_cast<int64_t>(graph.node_count());
  report.initializers_before = static_cast<int64_t>(graph.initializers().size());
  for (const std::vector<Pass>* stage : {&passes_, &finishing_})
    for (const Pass& p : *stage) {
      report.passes.emplace_back();
      report.passes.back().name = p.name;
    }
  report.converged = run_stage(graph, options, passes_, 0, report);
  const bool finished = run_stage(graph, options, finishing_, passes_.size(), report);
  report.converged = report.converged && finished;
  report.nodes_after = static_cast<int64_t>(graph.node_count());
  report.initializers_after = static_cast<int64_t>(graph.initializers().size());
  return report;
}

bool Pipeline::run_stage(Graph& graph, const OptimizeOptions& options, const std::vector<Pass>& passes,
                         size_t first_stat, OptimizeReport& report) {
  if (passes.empty() || options.max_iterations <= 0) return true;
  for (int round = 0; round < options.max_iterations; ++round) {
    bool changed = false;
    for (size_t i = 0; i < passes.size(); ++i) {
      const Pass& pass = passes[i];
      if (options.disabled_passes.count(pass.name)) continue;
      PassStats& stats = report.passes[first_stat + i];
      PassContext ctx(options, stats, report.warnings);
      const auto start = std::chrono::steady_clock::now();
      bool did = false;
      try {
        did = pass.run(graph, ctx);
      } catch (const Error& e) {
        // Patches are atomic, so the graph is valid whatever the pass had done before
        // throwing; a bug in one rewrite should cost its rewrite, not the model.
        if (options.verify) throw;
        ctx.warn(std::string("stopped by an error: ") + e.what());
      }
      stats.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ++stats.runs;
      if (did) ++stats.changed_runs;
      changed |= did;
      if (options.verify) verify_or_fail(graph, pass.name);
    }
    report.iterations += 1;
    if (!changed) return true;
  }
  return false;
}

OptimizeReport optimize(Graph& graph, const OptimizeOptions& options) {
  return Pipeline::standard(options).run(graph, options);
}

OptimizeReport run_pass(Graph& graph, const Pass& pass, const OptimizeOptions& options) {
  OptimizeOptions opts = options;
  opts.max_iterations = 1;
  opts.verify = true;
  return Pipeline({pass}).run(graph, opts);
}

}  // namespace octet
