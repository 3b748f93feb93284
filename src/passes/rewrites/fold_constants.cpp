// Constant folding: a node whose inputs are all constant is run once, now, by its
// reference kernel, and its outputs become initializers.
//
// One sweep in topological order folds whole chains (Constant -> Cast -> Pow), keeping
// intermediate results in memory; only results some unfolded node reads become
// initializers. Not folded:
// - results larger than options().fold_max_bytes (a ConstantOfShape or Tile must not
//   blow up the file);
// - random ops, Dropout (cleanup handles it), DequantizeLinear unless fold_dequantize
//   (it would turn int8 weights back into float ones). At level 2, which prepares a
//   graph for octet's runtime, a DequantizeLinear of a constant that no MatMul/Gemm reads
//   (nor a patch Conv that becomes one) is folded after all: no int8 kernel takes its
//   readers (a Conv's weights, an embedding table), so dequantizing once at load beats
//   dequantizing on every run;
// - nodes with subgraphs; nodes producing a graph output (an initializer cannot be one
//   under a second name) or a value a subgraph reads by name; ops without a reference
//   kernel;
// - a node whose kernel fails or disagrees with inference: left for the runtime to report
//   with its usual message rather than turned into a silent constant.
#include <unordered_map>
#include <unordered_set>

#include "core/sizes.h"
#include "kernels/kernel.h"
#include "passes/pattern.h"
#include "passes/pipeline.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

// Read as an operand (A or B) that fuse_qdq_matmul may turn into an int8 matmul, or as
// the weight of a patch Conv that conv_patches_to_matmul turns into one. A Gemm's C is a
// bias: onnxruntime's quantizer writes it as DequantizeLinear of int32, which is folded
// to the float bias the int8 kernel takes.
bool read_by_int8_matmul(const Node& dq) {
  for (const Use& u : dq.output(0)->uses()) {
    if ((is_op(u.node, "MatMul") || is_op(u.node, "Gemm")) && u.index < 2) return true;
    if (u.index == 1 && int8_patch_conv(u.node)) return true;
  }
  return false;
}

bool excluded_op(const Node& n, const OptimizeOptions& options) {
  static const std::unordered_set<std::string> kRandom = {
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli",
      "Dropout"};
  if (kRandom.count(n.op_type())) return true;
  if (n.op_type() == "DequantizeLinear" && !options.fold_dequantize &&
      (options.level < 2 || read_by_int8_matmul(n)))
    return true;
  if (!n.implicit_inputs().empty()) return true;
  for (const Attribute& a : n.attributes())
    if (a.kind == Attribute::Kind::Graph || a.kind == Attribute::Kind::Graphs) return true;
  return false;
}

// True when inference already knows an output is larger than the fold budget: the kernel
// need not run only for its result to be thrown away (a quantized embedding table's
// DequantizeLinear would otherwise dequantize tens of MB at every optimize).
bool known_too_large(const Node& n, size_t max_bytes) {
  for (const Value* out : n.outputs()) {
    if (!out || !out->type.known() || !out->type.dims) continue;
    std::vector<int64_t> shape;
    for (const Dim& d : *out->type.dims) {
      auto c = d.constant();
      if (!c) break;
      shape.push_back(*c);
    }
    if (shape.size() != out->type.dims->size()) continue;
    auto bytes = try_tensor_bytes(out->type.dtype, shape);  // nullopt: past any memory
    if (!bytes || *bytes > max_bytes) return true;
  }
  return false;
}

// True when the kernel's result fits what inference promised (dtype, rank, known dims).
bool matches_type(const Tensor& t, const TensorType& type) {
  if (type.known() && type.dtype != t.dtype()) return false;
  if (!type.dims) return true;
  if (static_cast<int64_t>(type.dims->size()) != t.rank()) return false;
  for (size_t i = 0; i < type.dims->size(); ++i) {
    auto c = (*type.dims)[i].constant();
    if (c && *c != t.shape()[i]) return false;
  }
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  const OptimizeOptions& options = ctx.options();
  const KernelRegistry& kernels = KernelRegistry::reference();
  std::unordered_map<const Value*, std::shared_ptr<const Tensor>> computed;
  std::vector<Node*> folded;

  for (Node* n : g.nodes()) {
    if (excluded_op(*n, options)) continue;
    KernelFn kernel = kernels.find(n->domain(), n->op_type());
    if (!kernel) continue;
    bool used = false, interface = false;
    for (const Value* out : n->outputs())
      if (out) {
        used |= !out->uses().empty();
        interface |= out->is_graph_output() || read_by_subgraph(out);
      }
    if (!used || interface || known_too_large(*n, options.fold_max_bytes)) continue;
    std::vector<const Tensor*> inputs;
    bool all_constant = true;
    for (const Value* v : n->inputs()) {
      if (!v) {
        inputs.push_back(nullptr);
        continue;
      }
      auto it = computed.find(v);
      const Tensor* t = it != computed.end() ? it->second.get()
                                             : (v->constant() && !v->is_graph_input() ? v->constant().get() : nullptr);
      if (!t) {
        all_constant = false;
        break;
      }
      inputs.push_back(t);
    }
    if (!all_constant) continue;

    KernelContext kc(*n, std::move(inputs));
    try {
      naming_allocation_failures([&] { return n->describe(); }, [&] { kernel(kc); });
    } catch (const Error& e) {
      ctx.warn("not folding " + n->describe() + ": " + e.what());
      continue;
    }
    bool ok = true;
    for (size_t i = 0; i < n->outputs().size() && ok; ++i) {
      const Value* out = n->output(i);
      if (!out) continue;
      const Tensor& t = kc.outputs()[i];
      if (t.dtype() == DType::Undefined || t.bytes() > options.fold_max_bytes) ok = false;
      else if (!matches_type(t, out->type)) {
        ctx.warn("not folding " + n->describe() + ": its kernel gives " + t.describe() + " for '" + out->name() +
                 "', inferred as " + out->type.to_string());
        ok = false;
      }
    }
    if (!ok) continue;
    for (size_t i = 0; i < n->outputs().size(); ++i)
      if (const Value* out = n->output(i))
        computed[out] = std::make_shared<const Tensor>(std::move(kc.outputs()[i]));
    folded.push_back(n);
  }
  if (folded.empty()) return false;

  // Results read only by other folded nodes need no initializer.
  const std::unordered_set<const Node*> is_folded(folded.begin(), folded.end());
  GraphPatch patch(g);
  for (Node* n : folded) {
    for (Value* out : n->outputs()) {
      if (!out) continue;
      bool read_outside = false;
      for (const Use& u : out->uses()) read_outside |= !is_folded.count(u.node);
      if (!read_outside) continue;
      Value* init = patch.add_initializer(out->name(), *computed.at(out));
      patch.replace_uses(out, init);
    }
    patch.remove_node(n);
    ctx.count(n->domain().empty() ? n->op_type() : n->domain() + "." + n->op_type());
  }
  return ctx.apply(patch);
}

}  // namespace

Pass fold_constants() { return {"fold_constants", run}; }

}  // namespace octet::passes
