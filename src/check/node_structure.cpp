#include "check/node_structure.h"

#include <algorithm>
#include <set>

#include "check/onnx_schema.h"
#include "ops/op_registry.h"

namespace octet::check {

namespace {

bool is_onnx_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

void check_op_known(const Node& n, std::vector<NodeIssue>& out) {
  if (OpRegistry::global().find(n.domain(), n.op_type())) return;
  if (!is_onnx_domain(n.domain())) {
    out.push_back({&n, "op '" + n.op_type() + "' of domain '" + n.domain() + "' is unknown to octet: it can neither "
                   "infer its outputs nor run it", "replace the node with standard ONNX ops"});
  } else if (!is_onnx_op(n.op_type()) && n.opset() <= newest_registry_opset()) {
    out.push_back({&n, "'" + n.op_type() + "' is not an ONNX op (no ai.onnx opset up to " +
                   std::to_string(n.opset()) + " defines it)", "check the op_type's spelling"});
  } else {
    out.push_back({&n, "octet has no rule for ONNX op '" + n.op_type() + "' (opset " + std::to_string(n.opset()) +
                   "): it can neither infer its outputs nor run it", "see `octet inspect` for the ops octet supports"});
  }
}

void check_attributes(const Node& n, const NodeSchema* schema, std::vector<NodeIssue>& out) {
  std::map<std::string, int> seen;
  for (const Attribute& a : n.attributes()) ++seen[a.name];
  for (const auto& [name, count] : seen) {
    if (count > 1)
      out.push_back({&n, "attribute '" + name + "' is given " + std::to_string(count) + " times; octet reads the "
                     "first, other tools may read another", "keep one"});
    if (!schema || schema->newer_than_registry) continue;
    if (std::binary_search(schema->attributes.begin(), schema->attributes.end(), name)) continue;
    std::string known;
    for (const std::string& k : schema->attributes) known += (known.empty() ? "" : ", ") + k;
    out.push_back({&n, "attribute '" + name + "' is not defined by " + schema->label() + " (" +
                   (known.empty() ? "it has no attributes" : "it has: " + known) + "); it is ignored",
                   "remove it or correct its name"});
  }
}

void check_arity(const Node& n, const NodeSchema& schema, std::vector<NodeIssue>& out) {
  if (schema.newer_than_registry) return;
  auto last_present = [](const std::vector<Value*>& vs) {
    size_t k = vs.size();
    while (k > 0 && !vs[k - 1]) --k;  // trailing empty names are absent optionals
    return k;
  };
  const size_t ins = last_present(n.inputs()), outs = last_present(n.outputs());
  if (ins > static_cast<size_t>(schema.max_inputs))
    out.push_back({&n, "has " + std::to_string(ins) + " inputs but " + schema.label() + " takes at most " +
                   std::to_string(schema.max_inputs), "remove the extra inputs"});
  if (outs > static_cast<size_t>(schema.max_outputs)) {
    std::string extra;
    for (size_t i = schema.max_outputs; i < outs; ++i)
      if (n.output(i)) extra += (extra.empty() ? "'" : ", '") + n.output(i)->name() + "'";
    out.push_back({&n, "has " + std::to_string(outs) + " outputs but " + schema.label() + " makes at most " +
                   std::to_string(schema.max_outputs) + "; " + extra + " would never be computed",
                   "remove the extra outputs"});
  }
}

}  // namespace

std::vector<NodeIssue> check_node_structure(const Graph& graph) {
  std::vector<NodeIssue> out;
  for (const Node* n : graph.nodes()) {
    check_op_known(*n, out);
    std::optional<NodeSchema> schema = is_onnx_domain(n->domain()) ? find_onnx_schema(*n) : std::nullopt;
    if (schema) std::sort(schema->attributes.begin(), schema->attributes.end());
    check_attributes(*n, schema ? &*schema : nullptr, out);
    if (schema) check_arity(*n, *schema, out);
  }
  return out;
}

std::vector<std::string> check_model_versions(int64_t ir_version, const std::map<std::string, int64_t>& opsets) {
  std::vector<std::string> out;
  if (ir_version > kNewestKnownIrVersion)
    out.push_back("ir_version " + std::to_string(ir_version) + " is newer than the newest octet knows (" +
                  std::to_string(kNewestKnownIrVersion) + "); what that version added is not read");
  for (const auto& [domain, version] : opsets)
    if (is_onnx_domain(domain) && version > kNewestKnownOnnxOpset)
      out.push_back("the model imports ai.onnx opset " + std::to_string(version) + ", newer than the newest octet "
                    "knows (" + std::to_string(kNewestKnownOnnxOpset) + "); its nodes are read with the meaning of "
                    "the newest opset octet has for them");
  return out;
}

}  // namespace octet::check
