#include "check/type_check.h"

#include "check/node_structure.h"

#include <set>

#include "octet/error.h"

namespace octet::check {

namespace {

bool is_int_accumulator(const Value* v) {
  const Node* p = v ? v->producer() : nullptr;
  return p && (p->op_type() == "MatMulInteger" || p->op_type() == "ConvInteger");
}

// The fix for inputs of one type variable that disagree: which values to cast to what.
std::string mixed_types_fix(const std::vector<const Value*>& vals, DType widest_float) {
  for (const Value* v : vals)
    if (is_int_accumulator(v))
      return "cast the int32 accumulator '" + v->name() + "' to " + dtype_name(widest_float) +
             " and multiply by its input scales (octet legalize does both)";
  DType to = widest_float;
  if (to == DType::Undefined)
    for (const Value* v : vals)
      if (to == DType::Undefined || dtype_bits(v->type.dtype) > dtype_bits(to)) to = v->type.dtype;
  std::string casts;
  for (const Value* v : vals)
    if (v->type.dtype != to) casts += (casts.empty() ? "'" : ", '") + v->name() + "' (" + dtype_name(v->type.dtype) + ")";
  return "Cast " + casts + " to " + dtype_name(to) + " (octet legalize inserts the Casts; --compute-dtype picks another type)";
}

bool computes_in_half(const Node& n) {
  for (const Value* v : n.inputs())
    if (v && (v->type.dtype == DType::Float16 || v->type.dtype == DType::BFloat16)) return true;
  return false;
}

// What to do about a node the target cannot run; only what a tool here really does.
std::string target_fix(const Node& node, Target target) {
  if (node.domain() == "octet") return "write the model without octet fusions (octet optimize --level 1)";
  if (target == Target::Ort && computes_in_half(node))
    return "octet legalize --target ort (computes it in float32)";
  if (target == Target::TensorRT && (node.op_type() == "DynamicQuantizeLinear" || node.op_type() == "MatMulInteger" ||
                                     node.op_type() == "ConvInteger"))
    return "quantize for this target: octet quantize --target tensorrt (static symmetric Q/DQ)";
  return "rewrite the node for this target by hand (no octet rewrite covers it yet)";
}

}  // namespace

std::vector<InferFailure> infer_tolerant(Graph& graph, const DeclaredTypes& declared) {
  std::vector<InferFailure> failures;
  for (Node* node : graph.nodes()) {
    try {
      infer_node(*node);
    } catch (const Error& e) {
      failures.push_back({node, e.what()});
      for (Value* out : node->outputs()) {
        if (!out) continue;
        auto it = declared.find(out->name());
        out->type = it != declared.end() ? it->second : TensorType();
      }
    }
  }
  return failures;
}

std::vector<TypeProblem> check_node_schema(const Node& node) {
  std::vector<TypeProblem> out;
  auto schema = find_onnx_schema(node);
  if (!schema) return out;
  // Values per type variable, in slot order, and fixed-type slots.
  std::map<std::string, std::vector<std::pair<std::string, const Value*>>> by_var;
  auto visit = [&](const FormalParam* p, const Value* v, const std::string& role) {
    if (!p || !v || !v->type.known()) return;
    const DType t = v->type.dtype;
    if (schema->newer_than_registry && dtype_newer_than_registry(t)) return;  // the old schema cannot judge
    auto allowed = schema->allowed.find(p->type_str);
    if (allowed == schema->allowed.end()) {
      auto fixed = dtype_from_type_str(p->type_str);
      if (fixed && *fixed != t) {
        TypeProblem pr = problem_at(node, "onnx");
        pr.rule = schema->label() + ": " + role + " '" + v->name() + "' (" + p->name + ") must be " +
                  dtype_name(*fixed) + ", not " + dtype_name(t);
        pr.fix = "Cast '" + v->name() + "' to " + dtype_name(*fixed);
        out.push_back(std::move(pr));
      }
      return;
    }
    const auto& list = allowed->second;
    if (std::find(list.begin(), list.end(), t) == list.end()) {
      TypeProblem pr = problem_at(node, "onnx");
      std::string names;
      for (DType a : list) names.append(names.empty() ? "" : "|").append(dtype_name(a));
      pr.rule = schema->label() + ": " + role + " '" + v->name() + "' is " + dtype_name(t) + " but type " +
                p->type_str + " allows " + names;
      const bool has_fp32 = std::find(list.begin(), list.end(), DType::Float32) != list.end();
      pr.fix = dtype_is_float(t) && has_fp32 ? "compute this node in float32 (octet legalize --compute-dtype fp32)"
                                              : "Cast '" + v->name() + "' to an allowed type";
      out.push_back(std::move(pr));
    }
    if (p->homogeneous) by_var[p->type_str].emplace_back(role + " '" + v->name() + "'", v);
  };
  for (size_t i = 0; i < node.inputs().size(); ++i) visit(schema->input_param(i), node.input(i), "input");
  for (size_t i = 0; i < node.outputs().size(); ++i) visit(schema->output_param(i), node.output(i), "output");

  for (const auto& [var, vals] : by_var) {
    std::set<DType> types;
    DType widest = DType::Undefined;
    std::vector<const Value*> values;
    for (const auto& [label, v] : vals) {
      types.insert(v->type.dtype);
      values.push_back(v);
      if (dtype_is_float(v->type.dtype) && (widest == DType::Undefined || dtype_bits(v->type.dtype) > dtype_bits(widest) ||
                                            (widest == DType::BFloat16 && v->type.dtype == DType::Float32)))
        widest = v->type.dtype;
    }
    if (types.size() < 2) continue;
    TypeProblem pr = problem_at(node, "onnx");
    std::string parts;
    for (const auto& [label, v] : vals) parts += (parts.empty() ? "" : ", ") + label + " is " + dtype_name(v->type.dtype);
    pr.rule = schema->label() + ": type " + var + " must be one type but " + parts;
    pr.fix = mixed_types_fix(values, widest);
    out.push_back(std::move(pr));
  }
  return out;
}

CheckReport check_model_types(Graph& graph, const DeclaredTypes& declared, Target target) {
  CheckReport report;
  const std::vector<InferFailure> failures = infer_tolerant(graph, declared);
  std::set<const Node*> reported;
  // Unknown ops, repeated or undefined attributes, extra inputs/outputs: what every
  // command warns about on load is a problem here.
  for (const NodeIssue& issue : check_node_structure(graph)) {
    TypeProblem p = problem_at(*issue.node, "structure");
    p.rule = issue.rule;
    p.fix = issue.fix;
    report.problems.push_back(std::move(p));
  }
  bool newer_note = false;
  for (Node* node : graph.nodes()) {
    ++report.nodes_checked;
    for (TypeProblem& p : check_node_schema(*node)) {
      report.problems.push_back(std::move(p));
      reported.insert(node);
    }
    auto schema = find_onnx_schema(*node);
    if (schema && schema->newer_than_registry) newer_note = true;
    if (auto why = target_rejects(*node, schema ? &*schema : nullptr, target)) {
      TypeProblem p = problem_at(*node, quant::target_name(target));
      p.rule = *why;
      p.fix = target_fix(*node, target);
      report.problems.push_back(std::move(p));
      reported.insert(node);
    }
  }
  for (const InferFailure& f : failures) {
    if (reported.count(f.node)) continue;  // the spec-level problem already names it
    TypeProblem p = problem_at(*f.node, "inference");
    p.rule = f.message;
    report.problems.push_back(std::move(p));
  }
  // Edges: a type stored in the file (value_info, graph outputs) that the producer does
  // not produce. Another tool reading the stored type would mis-type the edge.
  for (Node* node : graph.nodes())
    for (const Value* out : node->outputs()) {
      if (!out || !out->type.known()) continue;
      auto it = declared.find(out->name());
      if (it == declared.end() || !it->second.known() || it->second.dtype == out->type.dtype) continue;
      TypeProblem p = problem_at(*node, "edge");
      p.rule = "'" + out->name() + "' is stored as " + dtype_name(it->second.dtype) + " but " + node->op_type() +
               " produces " + dtype_name(out->type.dtype);
      p.fix = "octet legalize rewrites the stored type (or Cast the output to " + dtype_name(it->second.dtype) + ")";
      report.problems.push_back(std::move(p));
    }
  if (newer_note)
    report.notes.push_back("the model imports an ai.onnx opset newer than " + std::to_string(newest_registry_opset()) +
                           ", the newest the linked ONNX library knows; such nodes were checked against their newest "
                           "known schema, and element types added since were not judged");
  return report;
}

}  // namespace octet::check
