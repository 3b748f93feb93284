#include "check/target_kernels.h"

#include <set>
#include <sstream>
#include <vector>

namespace octet::check {

namespace {

struct OrtRow {
  const char* op;
  int opset;
  int since;
  const char* binding;
  bool implemented;
};

const OrtRow kOrtRows[] = {
#include "check/ort_cpu_kernels.inc"
};

struct OrtEntry {
  TypeBinding binding;
  bool implemented;
};

// op -> probed opset -> rows, parsed once.
const std::map<std::string, std::map<int, std::vector<OrtEntry>>>& ort_table() {
  static const auto table = [] {
    std::map<std::string, std::map<int, std::vector<OrtEntry>>> t;
    for (const OrtRow& r : kOrtRows) {
      OrtEntry e{{}, r.implemented};
      std::stringstream items(r.binding);
      std::string item;
      while (std::getline(items, item, ',')) {
        auto eq = item.find('=');
        if (auto d = dtype_from_name(item.substr(eq + 1))) e.binding[item.substr(0, eq)] = *d;
      }
      t[r.op][r.opset].push_back(std::move(e));
    }
    return t;
  }();
  return table;
}

std::string binding_text(const TypeBinding& b) {
  std::string s;
  for (const auto& [var, t] : b) s += (s.empty() ? "" : ", ") + var + "=" + dtype_name(t);
  return s;
}

bool is_unsupported_trt_type(DType t) {
  return t == DType::Float64 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64 ||
         t == DType::Int16 || t == DType::Complex64 || t == DType::Complex128 || t == DType::String;
}

std::optional<std::string> ort_rejects(const Node& node, const NodeSchema* schema) {
  if (node.domain() == "octet")
    return "onnxruntime has no octet-domain ops (" + node.op_type() + " is octet's own fused op)";
  if (node.domain() == "com.microsoft" && node.op_type() == "MatMulNBits") {
    const Value* a = node.input(0);
    if (a && a->type.known() && a->type.dtype != DType::Float32 && a->type.dtype != DType::Float16)
      return "onnxruntime CPU: com.microsoft.MatMulNBits takes A as float32 or float16, not " +
             dtype_name(a->type.dtype);
    return std::nullopt;
  }
  if (!schema) return std::nullopt;
  const TypeBinding binding = bind_type_vars(node, *schema);
  auto ok = ort_cpu_implements(node.op_type(), schema->node_opset, binding);
  if (ok && !*ok)
    return "onnxruntime CPU has no " + node.op_type() + " kernel for " + binding_text(binding) +
           " (tools/profiles/make_ort_cpu_profile.py asked onnxruntime)";
  return std::nullopt;
}

std::optional<std::string> trt_rejects(const Node& node) {
  static const std::set<std::string> kNoTrt = {"DynamicQuantizeLinear", "MatMulInteger", "ConvInteger",
                                               "QLinearMatMul", "QLinearConv"};
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return "TensorRT's ONNX parser has no " + node.domain() + "-domain ops";
  if (kNoTrt.count(node.op_type()))
    return "TensorRT supports static symmetric int8 Q/DQ only, not " + node.op_type();
  for (const auto* list : {&node.inputs(), &node.outputs()})
    for (const Value* v : *list)
      if (v && v->type.known() && is_unsupported_trt_type(v->type.dtype))
        return "TensorRT has no " + dtype_name(v->type.dtype) + " tensors ('" + v->name() + "')";
  return std::nullopt;
}

}  // namespace

TypeBinding bind_type_vars(const Node& node, const NodeSchema& schema) {
  TypeBinding b;
  auto bind = [&](const FormalParam* p, const Value* v) {
    if (!p || !v || !v->type.known() || !schema.allowed.count(p->type_str)) return;
    b.emplace(p->type_str, v->type.dtype);
  };
  for (size_t i = 0; i < node.inputs().size(); ++i) bind(schema.input_param(i), node.input(i));
  for (size_t i = 0; i < node.outputs().size(); ++i) bind(schema.output_param(i), node.output(i));
  return b;
}

std::optional<bool> ort_cpu_implements(const std::string& op, int64_t opset, const TypeBinding& binding) {
  const auto& table = ort_table();
  auto it = table.find(op);
  if (it == table.end()) return std::nullopt;
  // The probed opset at or below the node's (the kernels registered for that range).
  const std::vector<OrtEntry>* rows = nullptr;
  for (const auto& [probed, r] : it->second)
    if (probed <= opset || !rows) rows = &r;
  for (const OrtEntry& e : *rows) {
    bool same = true;
    for (const auto& [var, t] : e.binding) {
      auto b = binding.find(var);
      if (b == binding.end() || b->second != t) same = false;
    }
    if (same && !e.binding.empty()) return e.implemented;
  }
  return std::nullopt;
}

std::optional<std::string> target_rejects(const Node& node, const NodeSchema* schema, Target target) {
  switch (target) {
    case Target::Octet: return std::nullopt;
    case Target::Ort: return ort_rejects(node, schema);
    case Target::TensorRT: return trt_rejects(node);
  }
  return std::nullopt;
}

}  // namespace octet::check
