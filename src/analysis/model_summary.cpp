#include "analysis/model_summary.h"

#include <iomanip>
#include <map>
#include <sstream>

#include "analysis/macs.h"
#include "kernels/kernel.h"
#include "ops/op_registry.h"

namespace octet {

namespace {

using nlohmann::json;

std::string op_key(const Node& n) { return n.domain().empty() ? n.op_type() : n.domain() + "." + n.op_type(); }

json value_json(const Value* v) {
  json dims = json::array();
  if (v->type.dims)
    for (const Dim& d : *v->type.dims) {
      if (auto c = d.constant()) dims.push_back(*c);
      else dims.push_back(d.to_string());
    }
  return {{"name", v->name()},
          {"dtype", dtype_name(v->type.dtype)},
          {"shape", v->type.dims ? dims : json(nullptr)}};
}

json parameters_json(const Graph& g) {
  std::map<std::string, std::pair<int64_t, int64_t>> by_dtype;  // count, bytes
  int64_t count = 0, bytes = 0;
  for (const Value* v : g.initializers()) {
    // A weight a Session released (kept packed by its kernel) still counts, from its type.
    int64_t numel = 0, size = 0;
    DType dtype = v->type.dtype;
    if (const Tensor* t = v->constant().get()) {
      dtype = t->dtype();
      numel = t->numel();
      size = static_cast<int64_t>(t->bytes());
    } else if (v->type.known() && v->type.dims && v->type.dtype != DType::String) {
      numel = 1;
      for (const Dim& d : *v->type.dims) numel *= d.constant().value_or(0);
      size = static_cast<int64_t>(dtype_storage_bytes(v->type.dtype, numel));
    } else {
      continue;
    }
    auto& slot = by_dtype[dtype_name(dtype)];
    slot.first += numel;
    slot.second += size;
    count += numel;
    bytes += size;
  }
  json per = json::object();
  for (const auto& [dtype, cb] : by_dtype) per[dtype] = {{"count", cb.first}, {"bytes", cb.second}};
  return {{"count", count}, {"bytes", bytes}, {"by_dtype", per}};
}

json macs_json(const Graph& g, const Bindings& bindings) {
  std::map<std::string, Dim> by_op;
  Dim total = 0;
  for (const Node* n : g.nodes()) {
    auto macs = node_macs(*n);
    if (!macs) continue;
    by_op[op_key(*n)] = by_op.count(op_key(*n)) ? by_op[op_key(*n)] + *macs : *macs;
    total = total + *macs;
  }
  auto entry = [&](const Dim& d) {
    Dim bound = d.substitute(bindings);
    json e = {{"formula", d.to_string()}};
    if (auto c = bound.constant()) e["value"] = *c;
    else e["value"] = nullptr, e["unbound"] = bound.to_string();
    return e;
  };
  json per = json::object();
  for (const auto& [op, d] : by_op) per[op] = entry(d);
  json b = json::object();
  for (const auto& [k, v] : bindings) b[k] = v;
  return {{"bindings", b}, {"total", entry(total)}, {"by_op", per}};
}

// Per op type: does octet infer its types and shapes, and does it have a kernel to run it.
json support_json(const Graph& g) {
  json ops = json::object();
  json unsupported = json::array(), not_runnable = json::array();
  for (const Node* n : g.nodes()) {
    const std::string key = op_key(*n);
    if (ops.contains(key)) continue;
    bool infers = OpRegistry::global().find(n->domain(), n->op_type()) != nullptr;
    bool runs = KernelRegistry::reference().find(n->domain(), n->op_type()) != nullptr;
    bool fast = KernelRegistry::optimized().find(n->domain(), n->op_type()) != nullptr;
    ops[key] = {{"shape_inference", infers}, {"runs", runs}, {"optimized_kernel", fast}};
    if (!infers) unsupported.push_back(key);
    if (!runs) not_runnable.push_back(key);
  }
  return {{"ops", ops}, {"unsupported", unsupported}, {"not_runnable", not_runnable}};
}

}  // namespace

std::map<std::string, int64_t> octet_op_counts(const Graph& graph) {
  std::map<std::string, int64_t> out;
  for (const Node* n : graph.nodes())
    if (n->domain() == "octet") ++out["octet." + n->op_type()];
  return out;
}

nlohmann::json summarize_model(const Model& model, const Bindings& bindings) {
  const Graph& g = *model.graph;
  json opsets = json::object();
  for (const auto& [domain, version] : g.opset_imports) opsets[domain.empty() ? "ai.onnx" : domain] = version;
  json inputs = json::array(), outputs = json::array();
  for (const Value* v : g.inputs())
    if (!v->is_initializer()) inputs.push_back(value_json(v));
  for (const Value* v : g.outputs()) outputs.push_back(value_json(v));
  std::map<std::string, int64_t> histogram;
  for (const Node* n : g.nodes()) ++histogram[op_key(*n)];
  return {
      {"file", model.source_path.string()},
      {"ir_version", model.ir_version},
      {"producer", model.producer_name + (model.producer_version.empty() ? "" : " " + model.producer_version)},
      {"opset_imports", opsets},
      {"inputs", inputs},
      {"outputs", outputs},
      {"node_count", g.node_count()},
      {"op_histogram", histogram},
      {"octet_ops", octet_op_counts(g)},
      {"parameters", parameters_json(g)},
      {"macs", macs_json(g, bindings)},
      {"support", support_json(g)},
      {"warnings", model.warnings},
  };
}

namespace {
std::string shape_text(const json& shape) {
  if (shape.is_null()) return "[?]";
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (shape[i].is_string() ? shape[i].get<std::string>() : std::to_string(shape[i].get<int64_t>()));
  return s + "]";
}

std::string human(double v, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T"};
  int p = 0;
  while (v >= 1000 && p < 4) v /= 1000, ++p;
  std::ostringstream out;
  out << std::fixed << std::setprecision(p ? 2 : 0) << v << " " << prefixes[p] << unit;
  return out.str();
}
// The optimizer report as OptimizeReport::to_text() words it, from its JSON.
std::string render_optimizer_text(const json& r) {
  std::ostringstream out;
  out << "optimizer";
  if (r.contains("level")) out << " (level " << r["level"] << ")";
  out << ": nodes " << r["nodes_before"] << " -> " << r["nodes_after"] << ", initializers "
      << r["initializers_before"] << " -> " << r["initializers_after"] << "\n";
  for (const auto& p : r["passes"]) {
    if (p["rewrites"].get<int64_t>() == 0) continue;
    out << "  " << p["name"].get<std::string>() << ": " << p["rewrites"] << " rewrite(s), nodes -"
        << p["nodes_removed"] << " +" << p["nodes_added"];
    if (p["initializers_added"].get<int64_t>() || p["initializers_removed"].get<int64_t>())
      out << ", initializers -" << p["initializers_removed"] << " +" << p["initializers_added"];
    std::string details;
    for (const auto& [what, n] : p["details"].items()) details += (details.empty() ? "" : ", ") + what + " " + n.dump();
    out << (details.empty() ? "" : " (" + details + ")") << "\n";
  }
  for (const auto& w : r["warnings"]) out << "  warning: " << w.get<std::string>() << "\n";
  return out.str();
}
}  // namespace

std::string render_summary_text(const nlohmann::json& s) {
  std::ostringstream out;
  out << "model:      " << s["file"].get<std::string>() << "\n";
  out << "producer:   " << s["producer"].get<std::string>() << ", IR version " << s["ir_version"] << "\n";
  out << "opsets:    ";
  for (const auto& [domain, version] : s["opset_imports"].items()) out << " " << domain << "=" << version;
  out << "\n\ninputs:\n";
  for (const auto& v : s["inputs"])
    out << "  " << v["name"].get<std::string>() << ": " << v["dtype"].get<std::string>() << shape_text(v["shape"]) << "\n";
  out << "outputs:\n";
  for (const auto& v : s["outputs"])
    out << "  " << v["name"].get<std::string>() << ": " << v["dtype"].get<std::string>() << shape_text(v["shape"]) << "\n";

  const json& params = s["parameters"];
  out << "\nparameters: " << human(params["count"].get<double>(), "") << "("
      << human(params["bytes"].get<double>(), "B") << ")\n";
  for (const auto& [dtype, e] : params["by_dtype"].items())
    out << "  " << std::left << std::setw(10) << dtype << std::right << std::setw(12) << e["count"].get<int64_t>()
        << " values " << std::setw(12) << e["bytes"].get<int64_t>() << " bytes\n";

  out << "\nops (" << s["node_count"] << " nodes):\n";
  const json& support = s["support"]["ops"];
  for (const auto& [op, count] : s["op_histogram"].items()) {
    const json& sup = support[op];
    out << "  " << std::left << std::setw(28) << op << std::right << std::setw(6) << count.get<int64_t>()
        << (sup["shape_inference"].get<bool>() ? "" : "   (no shape inference)")
        << (sup["runs"].get<bool>() ? "" : "   (no kernel)")
        << (sup.value("optimized_kernel", false) ? "   (optimized kernel)" : "") << "\n";
  }

  const json& fused = s.value("octet_ops", json::object());
  if (!fused.empty()) {
    int64_t total = 0;
    for (const auto& [op, count] : fused.items()) total += count.get<int64_t>();
    out << "\nfused ops (octet domain, " << total << " nodes):";
    const char* sep = " ";
    for (const auto& [op, count] : fused.items()) out << sep << op << " " << count.get<int64_t>(), sep = ", ";
    out << "\n";
  }
  if (s.contains("optimizer")) out << "\n" << render_optimizer_text(s["optimizer"]);

  const json& macs = s["macs"];
  out << "\nMACs";
  if (!macs["bindings"].empty()) {
    out << " at";
    for (const auto& [k, v] : macs["bindings"].items()) out << " " << k << "=" << v;
  }
  out << ":\n";
  auto mac_text = [](const json& e) {
    return e["value"].is_null() ? e["formula"].get<std::string>() : human(e["value"].get<double>(), "MAC");
  };
  for (const auto& [op, e] : macs["by_op"].items())
    out << "  " << std::left << std::setw(28) << op << std::right << " " << mac_text(e) << "\n";
  out << "  " << std::left << std::setw(28) << "total" << std::right << " " << mac_text(macs["total"]) << "\n";

  const json& unsupported = s["support"]["unsupported"];
  const json& not_runnable = s["support"]["not_runnable"];
  out << "\nsupport: ";
  if (unsupported.empty() && not_runnable.empty()) out << "octet infers and runs every op in this model";
  if (!unsupported.empty()) {
    out << "no shape inference for";
    for (const auto& op : unsupported) out << " " << op.get<std::string>();
    out << (not_runnable.empty() ? "" : "; ");
  }
  if (!not_runnable.empty()) {
    out << "no kernel for";
    for (const auto& op : not_runnable) out << " " << op.get<std::string>();
  }
  out << "\n";
  if (!s["warnings"].empty()) {
    out << "\nwarnings:\n";
    for (const auto& w : s["warnings"]) out << "  " << w.get<std::string>() << "\n";
  }
  return out.str();
}

}  // namespace octet
