// com.microsoft.MatMulNBits -> Split(last axis) -> octet.MatMulNBits with `split`: the
// product writes each part as its own output.
//
// Why: merge_sibling_matmuls makes a decoder layer's q, k and v projections one GEMV and
// a Split; at decode the Split is one more kernel call and a copy per layer (SmolLM2: 30 a
// step). octet.MatMulNBits' packed GEMV stores each 16-column panel straight into the part
// that holds it (kernels/cpu/matmul_nbits.cpp), so the parts cost nothing extra. Its
// columns are the product's columns, so the outputs are the Split's bit for bit.
//
// The same for a float decoder: ai.onnx MatMul(A, W) with W a constant 2-D float32 weight
// (merge_sibling_matmuls' merged q/k/v) -> Split becomes octet.MatMulBias(A, W) with
// `split` (no bias): the fp32 decode GEMV stores each 64-column panel in its part
// (dnnl_matmul_gemv.cpp); the prefill's oneDNN product is copied into the parts as the
// Split did.
//
// Matched: a MatMulNBits (com.microsoft, no residual) or such a MatMul whose output is read by one Split
// alone (not a graph output), on the last axis (known rank), with every Split output
// present and replaceable (can_replace), and its sizes known: a constant int64 `split` input,
// the `split` attribute (before opset 13), or equal parts of a known N (opset 18's
// num_outputs, N divisible). Runs in the finishing stage after fuse_swiglu, which takes
// a gate/up Split whole.
#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

bool is_nbits(const Node* n) {
  return n && n->domain() == "com.microsoft" && n->op_type() == "MatMulNBits" && n->outputs().size() == 1;
}

// The N of a float32 MatMul(A, W [K, N]) with a constant W, or 0.
int64_t float_matmul_columns(const Node* n) {
  if (!is_op(n, "MatMul") || n->inputs().size() != 2 || n->outputs().size() != 1 || !n->input(0)) return 0;
  const Tensor* w = constant_value(n->input(1));
  if (n->input(0)->type.dtype != DType::Float32 || !w || w->dtype() != DType::Float32 || w->rank() != 2) return 0;
  return w->shape()[1];
}

bool run(Graph& g, PassContext& ctx) {
  RemovedNodes removed;
  for (Node* n : g.nodes()) {
    if (removed.contains(n)) continue;  // freed by an earlier rewrite: not to be read
    const bool nbits = is_nbits(n);
    const int64_t N = nbits ? n->attr_int("N", 0) : float_matmul_columns(n);
    if (N <= 0) continue;
    Node* split = sole_consumer(n->output(0));
    if (!is_op(split, "Split") || split->input(0) != n->output(0) || split->outputs().size() < 2) continue;
    bool outputs_present = true;
    for (const Value* v : split->outputs()) outputs_present = outputs_present && v && can_replace(v, n->output(0));
    if (!outputs_present) continue;
    const std::vector<int64_t> sizes = last_axis_split_sizes(split, N);
    if (sizes.empty()) continue;
    GraphPatch patch = make_patch(g);
    std::vector<Attribute> attrs = n->attributes();
    attrs.push_back(Attribute::make_ints("split", sizes));
    // (can_replace above compared each part with Y: same element type and rank.)
    Node* fused = patch.add_node(nbits ? "MatMulNBits" : "MatMulBias", n->inputs(), sizes.size(), std::move(attrs),
                                 "octet", n->name() + "_split_outputs");
    for (size_t i = 0; i < sizes.size(); ++i) patch.replace_uses(split->output(i), fused->output(i));
    patch.remove_node(n);
    patch.remove_node(split);
    if (!ctx.apply(patch)) continue;
    import_octet_domain(g);
    removed.add({n, split});
    ctx.count(std::string(nbits ? "octet.MatMulNBits" : "octet.MatMulBias") + "(split " + std::to_string(sizes.size()) + ")");
  }
  return removed.any();
}

}  // namespace

Pass fuse_nbits_split() { return {"fuse_nbits_split", run}; }

}  // namespace octet::passes
