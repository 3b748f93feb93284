#include "quant/quantize_plan.h"

#include <set>

namespace octet::quant {
namespace {

bool is_float32(const Value* v) { return v && v->type.known() && v->type.dtype == DType::Float32; }

// A weight octet may rewrite: constant data that no caller can replace at run time.
bool is_constant_weight(const Value* v) {
  return v && v->is_initializer() && !v->is_graph_input() && v->constant();
}

std::optional<size_t> rank_of(const Value* v) {
  if (!v || !v->type.dims) return std::nullopt;
  return v->type.dims->size();
}

bool excluded(const Node& n, const QuantizeOptions& o) {
  return o.exclude.count(n.name()) || o.exclude.count(n.op_type());
}

// A MatMul, or a Gemm the per-row form takes (alpha = beta = 1: qdq_rewrite's dynamic
// rewrite; another Gemm stays calibrated rather than float).
bool per_token(const Node& n, const QuantizeOptions& o) {
  if (o.mode != Mode::Static || n.op_type() == "Conv" || !(o.per_token.count(n.name()) || o.per_token.count(n.op_type())))
    return false;
  return n.op_type() != "Gemm" || (n.attr_float("alpha", 1) == 1 && n.attr_float("beta", 1) == 1);
}

class Planner {
 public:
  Planner(const QuantizeOptions& o, QuantizePlan& plan) : o_(o), plan_(plan) {}

  void visit(Node* n) {
    if (!n->domain().empty()) return;
    const std::string& op = n->op_type();
    // Subgraph bodies are kept verbatim: their matmuls stay float, which the report says
    // (optimum's merged decoder is one If holding the whole decoder; the set's folder
    // quantizes it from its two calibrated decoders, merged_decoder.h).
    if (op == "If" || op == "Loop" || op == "Scan")
      return skip(n, "its subgraphs are not quantized (for an optimum merged decoder, quantize the set's folder, "
                     "which quantizes decoder_model and decoder_with_past_model and writes the merged decoder from them)");
    if (op != "MatMul" && op != "Gemm" && op != "Conv" && op != "Gather") return;
    if (excluded(*n, o_)) return skip(n, "excluded by --exclude");
    if (op == "Gather") return visit_gather(n);
    Value* a = n->input(0);
    Value* b = n->input(1);
    if (!is_float32(a) || !is_float32(b)) return skip(n, "inputs are not float32");
    if (op == "MatMul") return visit_matmul(n, a, b);
    if (op == "Gemm") return visit_gemm(n, b);
    return visit_conv(n, b);
  }

 private:
  void visit_matmul(Node* n, Value* a, Value* b) {
    if (is_constant_weight(b)) {
      if (rank_of(b) != 2u) return skip(n, "constant B is not 2-D");
      return weight(n, 1, 1);
    }
    if (b->is_initializer()) return skip(n, "B is a graph input with a default (overridable)");
    if (a->is_initializer()) return skip(n, "A is constant and B is not");
    if (!o_.quantize_attention) return skip(n, "activation x activation matmul kept float (--attention fp32)");
    if (o_.mode == Mode::Dynamic) return skip(n, "activation x activation matmul stays float in dynamic mode");
    QuantizedNode q{n, QuantKind::Activation, -1, 0, {0, 1}};
    add(q);
  }

  void visit_gemm(Node* n, Value* b) {
    if (!is_constant_weight(b)) return skip(n, "B is not a constant");
    if (n->attr_int("transA", 0) != 0) return skip(n, "transA=1 is not quantized");
    // B is [K, N], or [N, K] with transB=1: the output channel is N.
    weight(n, 1, n->attr_int("transB", 0) ? 0 : 1);
  }

  void visit_conv(Node* n, Value* w) {
    if (!is_constant_weight(w)) return skip(n, "W is not a constant");
    if (o_.mode == Mode::Dynamic) return skip(n, "Conv stays float in dynamic mode");
    weight(n, 1, 0);
  }

  void visit_gather(Node* n) {
    Value* table = n->input(0);
    if (!is_float32(table) || !is_constant_weight(table) || rank_of(table) != 2u) return;
    if (n->attr_int("axis", 0) != 0) return skip(n, "Gather axis is not 0");
    if (!o_.quantize_embeddings) return skip(n, "embeddings kept float");
    if (table->constant()->bytes() < o_.min_embedding_bytes)
      return skip(n, "small table kept float (int8 saves under " + std::to_string(o_.min_embedding_bytes >> 10) +
                         " KiB; the runtime folds it to float)");
    add({n, QuantKind::Embedding, 0, 0, {}});
  }

  void weight(Node* n, int slot, int axis) {
    QuantizedNode q{n, QuantKind::Weight, slot, axis, {}};
    q.per_token = per_token(*n, o_);
    if (o_.mode == Mode::Static && !q.per_token) q.activation_inputs = {0};
    add(q);
  }

  void add(const QuantizedNode& q) {
    for (int slot : q.activation_inputs) {
      Value* v = q.node->input(static_cast<size_t>(slot));
      if (seen_.insert(v).second) plan_.activations.push_back(v);
    }
    plan_.nodes.push_back(q);
  }

  void skip(const Node* n, std::string why) { plan_.skipped.push_back({n, std::move(why)}); }

  const QuantizeOptions& o_;
  QuantizePlan& plan_;
  std::set<const Value*> seen_;
};

}  // namespace

QuantizePlan plan_quantization(Graph& graph, const QuantizeOptions& options) {
  QuantizePlan plan;
  Planner planner(options, plan);
  for (Node* n : graph.nodes()) planner.visit(n);
  return plan;
}

std::set<std::string> attention_operands(const QuantizePlan& plan) {
  std::set<std::string> out;
  for (const QuantizedNode& q : plan.nodes) {
    if (q.kind != QuantKind::Activation) continue;
    for (int slot : q.activation_inputs) {
      const Node* p = q.node->input(static_cast<size_t>(slot))->producer();
      const bool probabilities = p && p->domain().empty() && p->op_type() == "Softmax";
      if (!probabilities) out.insert(q.node->input(static_cast<size_t>(slot))->name());
    }
  }
  return out;
}

const char* kind_name(QuantKind k) {
  switch (k) {
    case QuantKind::Weight: return "weight";
    case QuantKind::Activation: return "activation";
    case QuantKind::Embedding: return "embedding";
  }
  return "?";
}

}  // namespace octet::quant
