#include "check/type_problem.h"

#include <sstream>

namespace octet::check {

namespace {
std::string type_text(DType t) { return t == DType::Undefined ? "?" : dtype_name(t); }
}  // namespace

TypeProblem problem_at(const Node& node, std::string source) {
  TypeProblem p;
  p.node = node.name();
  p.op = node.domain().empty() || node.domain() == "ai.onnx" ? node.op_type() : node.domain() + "." + node.op_type();
  for (const Value* v : node.inputs())
    if (v) p.inputs.emplace_back(v->name(), v->type.dtype);
  p.source = std::move(source);
  return p;
}

std::string TypeProblem::to_text() const {
  std::ostringstream s;
  s << "node '" << node << "' (" << op << ") inputs [";
  for (size_t i = 0; i < inputs.size(); ++i) s << (i ? ", " : "") << inputs[i].first << ": " << type_text(inputs[i].second);
  s << "]: " << rule;
  if (!fix.empty()) s << "; fix: " << fix;
  return s.str();
}

nlohmann::json TypeProblem::to_json() const {
  nlohmann::json in = nlohmann::json::array();
  for (const auto& [name, t] : inputs) in.push_back({{"name", name}, {"dtype", type_text(t)}});
  return {{"node", node}, {"op", op}, {"inputs", in}, {"rule", rule}, {"fix", fix}, {"source", source}};
}

}  // namespace octet::check
