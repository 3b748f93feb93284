#include "ops/infer.h"

#include "ops/op_registry.h"

namespace octet {

namespace {

std::set<std::string> graph_input_symbols(const Graph& graph) {
  std::set<std::string> out;
  for (const Value* v : graph.inputs()) {
    if (!v->type.dims) continue;
    for (const Dim& d : *v->type.dims)
      if (d.is_symbol() && !Dim::is_anonymous_name(d.symbol_name())) out.insert(d.symbol_name());
  }
  return out;
}

bool dims_conflict(const Dim& declared, const Dim& inferred, const std::set<std::string>& input_symbols) {
  if (declared == inferred) return false;
  if (declared.is_constant()) return true;  // a stored known size that inference does not reproduce
  if (declared.is_symbol() && input_symbols.count(declared.symbol_name()))
    return inferred.is_constant();  // stored says "varies with the input", inference says fixed
  return false;  // anonymous or tool-made name: it knew nothing, so it cannot contradict
}

}  // namespace

bool types_conflict(const TensorType& declared, const TensorType& inferred,
                    const std::set<std::string>& input_symbols) {
  if (!declared.known() || !inferred.known()) return false;
  if (declared.dtype != inferred.dtype) return true;
  if (!declared.dims || !inferred.dims) return false;
  if (declared.dims->size() != inferred.dims->size()) return true;
  for (size_t i = 0; i < declared.dims->size(); ++i)
    if (dims_conflict((*declared.dims)[i], (*inferred.dims)[i], input_symbols)) return true;
  return false;
}

void infer_node(Node& node, std::vector<std::string>* warnings) {
  const OpDef* def = OpRegistry::global().find(node.domain(), node.op_type());
  if (!def || !def->infer) return;
  // An input whose element type nobody knows (produced by an op octet does not know and
  // not declared in the file) leaves this node's outputs as they are.
  for (const Value* in : node.inputs())
    if (in && !in->type.known()) return;
  // A re-inferred node must not keep values its rule no longer derives.
  for (Value* out : node.outputs())
    if (out) out->known_values.reset();
  InferContext ctx(node, warnings);
  try {
    def->infer(ctx);
  } catch (const Error& e) {
    // Shape arithmetic (Dim overflow) fails without knowing the node; say which it was.
    const std::string where = node.describe();
    if (std::string(e.what()).rfind(where, 0) == 0) throw;
    fail(where, ": ", e.what());
  }
}

InferResult infer_graph(Graph& graph, const DeclaredTypes& declared) {
  InferResult result;
  const std::set<std::string> input_symbols = graph_input_symbols(graph);
  for (Node* node : graph.nodes()) {
    const OpDef* def = OpRegistry::global().find(node->domain(), node->op_type());
    if (!def || !def->infer) {
      result.unknown_ops.push_back(node);
      for (Value* out : node->outputs())
        if (out) {
          auto it = declared.find(out->name());
          if (it != declared.end()) out->type = it->second;
        }
      continue;
    }
    infer_node(*node, &result.warnings);
    for (Value* out : node->outputs()) {
      if (!out) continue;
      auto it = declared.find(out->name());
      if (it == declared.end()) continue;
      if (!out->type.known()) {
        out->type = it->second;  // inference could not say; the file's word is all we have
      } else if (types_conflict(it->second, out->type, input_symbols)) {
        result.warnings.push_back(node->describe() + ": stored type of '" + out->name() + "' is " +
                                  it->second.to_string() + " but inference gives " +
                                  out->type.to_string() + "; using the inferred type");
      }
    }
  }
  return result;
}

}  // namespace octet
