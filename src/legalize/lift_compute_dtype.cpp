// Float16/bfloat16 nodes the target has no kernel for (onnxruntime's CPU provider has
// almost no bfloat16 kernels), or every float16/bfloat16 node with --compute-dtype fp32,
// compute in float32 instead.
//
// Regions, not single nodes: walking in topological order, a lifted node reads the
// float32 value its lifted producer already made, so a chain of lifted nodes has Casts
// only where it begins (float16/bfloat16 -> float32; constants keep their 16-bit
// storage behind a Cast the runtime folds at load) and where a node that was not lifted reads it (float32 -> its old type). Graph
// outputs are cast back to their old type by legalize(), so the interface is unchanged.
#include <map>

#include "check/type_check.h"
#include "legalize/cast_builder.h"
#include "legalize/rewrites.h"

namespace octet::legalize {

namespace {

bool is_half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

bool allows(const check::NodeSchema& s, const std::string& var, DType t) {
  auto it = s.allowed.find(var);
  return it != s.allowed.end() && std::find(it->second.begin(), it->second.end(), t) != it->second.end();
}

class Lifter {
 public:
  Lifter(Graph& g, const LegalizeOptions& o, RewriteLog& log) : graph_(g), options_(o), log_(log), casts_(g) {}

  void run() {
    for (Node* node : graph_.nodes()) visit(*node);
  }

 private:
  DType original(const Value* v) const {
    auto it = original_.find(v);
    return it == original_.end() ? v->type.dtype : it->second;
  }

  // The type variables the node binds to a 16-bit float (Pow's base T and exponent T1
  // separately), each with its type.
  std::map<std::string, DType> half_vars(const Node& node, const check::NodeSchema& s) const {
    std::map<std::string, DType> out;
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      const check::FormalParam* p = s.input_param(i);
      const Value* v = node.input(i);
      if (!p || !v || !is_half(original(v)) || !allows(s, p->type_str, DType::Float32)) continue;
      out.emplace(p->type_str, original(v));
    }
    return out;
  }

  bool target_lacks(const Node& node, const check::NodeSchema& s, const std::map<std::string, DType>& halves) const {
    for (const auto& [var, t] : halves)
      if (!allows(s, var, t)) return true;  // the spec itself has no such combination
    if (options_.target != Target::Ort) return false;
    check::TypeBinding b;
    for (size_t i = 0; i < node.inputs().size(); ++i)
      if (const auto* p = s.input_param(i); p && node.input(i) && s.allowed.count(p->type_str))
        b.emplace(p->type_str, original(node.input(i)));
    for (size_t i = 0; i < node.outputs().size(); ++i)
      if (const auto* p = s.output_param(i); p && node.output(i) && node.output(i)->type.known() && s.allowed.count(p->type_str))
        b.emplace(p->type_str, node.output(i)->type.dtype);
    auto half = check::ort_cpu_implements(node.op_type(), s.node_opset, b);
    if (!half || *half) return false;
    for (auto& [var, d] : b)
      if (halves.count(var)) d = DType::Float32;
    auto lifted = check::ort_cpu_implements(node.op_type(), s.node_opset, b);
    return !lifted || *lifted;  // lifting helps only if float32 is implemented
  }

  void visit(Node& node) {
    if (node.domain().empty() && node.op_type() == "Cast") return;  // converts whatever it reads
    auto schema = check::find_onnx_schema(node);
    std::map<std::string, DType> halves;
    if (schema) halves = half_vars(node, *schema);
    const bool lift =
        !halves.empty() && (options_.compute == ComputeDType::Float32 || target_lacks(node, *schema, halves));
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      Value* v = node.input(i);
      if (!v) continue;
      const check::FormalParam* p = schema ? schema->input_param(i) : nullptr;
      auto var = p ? halves.find(p->type_str) : halves.end();
      if (lift && var != halves.end() && original(v) == var->second) {
        if (v->type.dtype != DType::Float32) casts_.set_input(&node, i, casts_.as_type(v, DType::Float32));
      } else if (original(v) != v->type.dtype) {
        casts_.set_input(&node, i, casts_.as_type(v, original(v)));  // a reader that was not lifted
      }
    }
    std::vector<DType> before;
    for (const Value* o : node.outputs()) before.push_back(o ? o->type.dtype : DType::Undefined);
    reinfer(node);
    for (size_t i = 0; i < node.outputs().size(); ++i)
      if (Value* o = node.output(i); o && o->type.dtype != before[i]) original_[o] = before[i];
    if (lift)
      log_.note(node.describe() + ": computes in float32 instead of " + dtype_name(halves.begin()->second) +
                (options_.compute == ComputeDType::Float32 ? " (--compute-dtype fp32)"
                                                           : std::string(" (") + quant::target_name(options_.target) +
                                                                 " has no kernel for it)"));
  }

  Graph& graph_;
  const LegalizeOptions& options_;
  RewriteLog& log_;
  CastBuilder casts_;
  std::map<const Value*, DType> original_;  // values re-typed to float32: their old type
};

}  // namespace

void lift_compute_dtype(Graph& graph, const LegalizeOptions& options, RewriteLog& log) {
  Lifter(graph, options, log).run();
}

}  // namespace octet::legalize
