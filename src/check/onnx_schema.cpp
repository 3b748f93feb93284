#include "check/onnx_schema.h"

#include <onnx/defs/schema.h>

namespace octet::check {

namespace {

FormalParam to_param(const onnx::OpSchema::FormalParameter& p) {
  FormalParam f;
  f.name = p.GetName();
  f.type_str = p.GetTypeStr();
  f.optional = p.GetOption() == onnx::OpSchema::Optional;
  f.variadic = p.GetOption() == onnx::OpSchema::Variadic;
  f.homogeneous = p.GetIsHomogeneous();
  return f;
}

const FormalParam* param_for(const std::vector<FormalParam>& params, size_t slot) {
  if (slot < params.size()) return &params[slot];
  if (!params.empty() && params.back().variadic) return &params.back();
  return nullptr;
}

}  // namespace

const FormalParam* NodeSchema::input_param(size_t slot) const { return param_for(inputs, slot); }
const FormalParam* NodeSchema::output_param(size_t slot) const { return param_for(outputs, slot); }

std::optional<DType> dtype_from_type_str(const std::string& s) {
  const std::string prefix = "tensor(";
  if (s.rfind(prefix, 0) != 0 || s.back() != ')') return std::nullopt;
  return dtype_from_name(s.substr(prefix.size(), s.size() - prefix.size() - 1));
}

bool dtype_newer_than_registry(DType t) { return static_cast<int32_t>(t) > static_cast<int32_t>(DType::BFloat16); }

int64_t newest_registry_opset() {
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = ranges.find("");
  return it == ranges.end() ? 0 : it->second.second;
}

bool is_onnx_op(const std::string& op_type) {
  return onnx::OpSchemaRegistry::Schema(op_type, static_cast<int>(newest_registry_opset()), "") != nullptr;
}

std::optional<NodeSchema> find_onnx_schema(const Node& node) {
  const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
  if (!domain.empty()) return std::nullopt;  // only ai.onnx is checked against the spec
  const int64_t opset = node.opset();
  const int64_t newest = newest_registry_opset();
  const int max_version = static_cast<int>(std::min(opset, newest));
  const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(node.op_type(), max_version, domain);
  if (!s) return std::nullopt;
  NodeSchema out;
  out.op_type = node.op_type();
  out.since_version = s->SinceVersion();
  out.node_opset = opset;
  out.newer_than_registry = opset > newest;
  for (const auto& p : s->inputs()) out.inputs.push_back(to_param(p));
  for (const auto& p : s->outputs()) out.outputs.push_back(to_param(p));
  for (const auto& [name, attr] : s->attributes()) out.attributes.push_back(name);
  out.max_inputs = s->max_input();
  out.max_outputs = s->max_output();
  for (const auto& tc : s->typeConstraintParams()) {
    std::vector<DType>& allowed = out.allowed[tc.type_param_str];
    for (const std::string& t : tc.allowed_type_strs)
      if (auto d = dtype_from_type_str(t)) allowed.push_back(*d);
  }
  return out;
}

}  // namespace octet::check
