#include "legalize/legalize.h"

#include <sstream>

#include "check/type_check.h"
#include "legalize/cast_builder.h"
#include "legalize/rewrites.h"
#include "octet/error.h"
#include "passes/pipeline.h"
#include "passes/rewrites/rewrites.h"

namespace octet::legalize {

ComputeDType parse_compute_dtype(const std::string& s) {
  if (s == "keep") return ComputeDType::Keep;
  if (s == "fp32" || s == "float32") return ComputeDType::Float32;
  if (s == "fp16" || s == "float16") return ComputeDType::Float16;
  fail("unknown compute dtype '", s, "' (fp32|fp16|keep)");
}

const char* compute_dtype_name(ComputeDType c) {
  switch (c) {
    case ComputeDType::Keep: return "keep";
    case ComputeDType::Float32: return "fp32";
    case ComputeDType::Float16: return "fp16";
  }
  return "?";
}

nlohmann::json LegalizeReport::to_json() const {
  nlohmann::json rw = nlohmann::json::array();
  for (const RewriteLog& r : rewrites) rw.push_back({{"name", r.name}, {"count", r.count}, {"details", r.details}});
  return {{"rewrites", rw}, {"unresolved", unresolved}, {"nodes_before", nodes_before}, {"nodes_after", nodes_after}};
}

std::string LegalizeReport::to_text() const {
  std::ostringstream s;
  for (const RewriteLog& r : rewrites) {
    s << "  " << r.name << ": " << r.count << "\n";
    for (const std::string& d : r.details) s << "    " << d << "\n";
  }
  for (const std::string& u : unresolved) s << "unresolved: " << u << "\n";
  s << "nodes: " << nodes_before << " -> " << nodes_after << "\n";
  return s.str();
}

LegalizeReport legalize(Graph& graph, const DeclaredTypes& declared, const LegalizeOptions& options) {
  LegalizeReport report;
  report.nodes_before = graph.node_count();
  check::infer_tolerant(graph, declared);
  // The interface keeps its types: remember what each graph output was.
  std::vector<std::pair<Value*, DType>> outputs;
  for (Value* o : graph.outputs()) {
    auto it = declared.find(o->name());
    outputs.emplace_back(o, it != declared.end() && it->second.known() ? it->second.dtype : o->type.dtype);
  }

  auto step = [&](const char* name, auto&& fn) {
    report.rewrites.push_back(RewriteLog{name, 0, {}});
    fn(report.rewrites.back());
  };
  step("resolve_type_mixes", [&](RewriteLog& log) { resolve_type_mixes(graph, options, log, report.unresolved); });
  step("unpack_packed_weights", [&](RewriteLog& log) { unpack_packed_weights(graph, options, log); });
  step("lift_compute_dtype", [&](RewriteLog& log) { lift_compute_dtype(graph, options, log); });
  step("restore_output_types", [&](RewriteLog& log) {
    CastBuilder casts(graph);
    for (auto& [out, dtype] : outputs)
      if (out->type.known() && dtype != DType::Undefined && out->type.dtype != dtype) {
        log.note("output '" + out->name() + "': cast back from " + dtype_name(out->type.dtype) + " to " +
                 dtype_name(dtype));
        casts.restore_output_type(out, dtype);
      }
  });
  step("cancel_casts", [&](RewriteLog& log) { cancel_casts(graph, log); });
  // Constants replaced by float32 copies, unpacked weights' initializers: nothing reads
  // them any more, and a file that keeps them is larger than the original.
  step("eliminate_dead_code", [&](RewriteLog& log) {
    const size_t before = graph.node_count() + graph.initializers().size();
    run_pass(graph, passes::eliminate_dead_code());
    log.count = before - graph.node_count() - graph.initializers().size();
  });

  // The result must type-check strictly; what still fails is reported, not hidden.
  for (Node* n : graph.nodes()) {
    try {
      infer_node(*n);
    } catch (const Error& e) {
      report.unresolved.push_back(e.what());
    }
  }
  report.nodes_after = graph.node_count();
  return report;
}

}  // namespace octet::legalize
