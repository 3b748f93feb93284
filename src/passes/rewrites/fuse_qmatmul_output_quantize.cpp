// octet.QMatMul whose output only static QMatMuls read -> it writes that output quantized
// (y_scale / y_zero_point, docs/quantization.md §2), and they read it as their A.
//
// Why (issue 20): an encoder's FFN up-projection (GeLU in its epilogue) wrote a float
// [S, 4E] tensor that the down-projection then read whole again to quantize it (with the
// SmoothQuant factor of a_channel_scale), in a parallel region of its own. oneDNN can
// write the 8-bit tensor straight from the product's epilogue: a quarter of the bytes
// written, and no pass or fork/join in the reader. The reader's a_channel_scale becomes
// the producer's output_scale (the same float32 product of each column, after the
// activation, as the reader's row scaling computed it).
//
// Matched: a QMatMul P without y_scale whose output is not a graph output or read by a
// subgraph, read only by QMatMuls as A that are static with one a_scale / a_zero_point /
// a_channel_scale (quantized_readers.h); with an a_channel_scale, P must have no
// output_scale of its own (two factors would round twice). P gets output_scale = the
// readers' a_channel_scale (if any), y_scale = their a_scale, y_zero_point = their
// a_zero_point; the readers lose a_channel_scale and read P's 8-bit output.
//
// Per-token readers instead (issue 20: the static default reads every linear input per
// token, so the down-projection quantized the up-projection's float [S, 4E] output per row
// in a pass of its own): dynamic QMatMuls of one dynamic_type without a_channel_scale
// (per_token_readers). P gets y_dynamic_type = their dynamic_type and three outputs (Y
// uint8, y_scale, y_zero_point per row), which the readers take as inputs 0, 1, 2. P's
// epilogue quantizes each finished row with the call the reader's own quantization made
// (quant_ops.h quantize_row_dynamic), so the readers' outputs keep their bits.
#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/quantized_readers.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

enum : size_t { kOutputScale = 9, kYScale = 10, kYZero = 11, kChannelScale = 8 };

bool candidate(const Node* p) {
  if (p->domain() != "octet" || p->op_type() != "QMatMul" || input_or_null(p, kYScale) || input_or_null(p, kYZero) ||
      p->has_attr("y_dynamic_type") || p->outputs().size() != 1)
    return false;
  const Value* y = p->output(0);
  return y && y->type.dtype == DType::Float32 && !y->is_graph_output() && !read_by_subgraph(y);
}

bool rewrite(Graph& g, PassContext& ctx, Node* p, const QuantizedReaders& r) {
  const Node* q0 = r.qmatmuls[0];
  Value* channel = input_or_null(q0, kChannelScale);
  if (channel && input_or_null(p, kOutputScale)) return false;
  GraphPatch patch = make_patch(g);
  std::vector<Value*> inputs = p->inputs();
  inputs.resize(kYZero + 1, nullptr);
  if (channel) inputs[kOutputScale] = channel;
  inputs[kYScale] = q0->input(1);
  inputs[kYZero] = input_or_null(q0, 2);
  while (!inputs.back()) inputs.pop_back();
  Node* fused = patch.add_node("QMatMul", inputs, 1, p->attributes(), "octet", p->name() + "_quantized");
  for (Node* q : r.qmatmuls) {
    patch.set_input(q, 0, fused->output(0));
    if (input_or_null(q, kChannelScale)) patch.set_input(q, kChannelScale, nullptr);
  }
  patch.remove_node(p);
  if (!ctx.apply(patch)) return false;
  ctx.count(channel ? "octet.QMatMul -> quantized output, a_channel_scale folded" : "octet.QMatMul -> quantized output");
  return true;
}

// P writes its output per row for per-token readers (see above).
bool rewrite_per_row(Graph& g, PassContext& ctx, Node* p, const QuantizedReaders& r) {
  GraphPatch patch = make_patch(g);
  std::vector<Attribute> attrs = p->attributes();
  attrs.push_back(Attribute::make_string("y_dynamic_type", r.qmatmuls[0]->attr_string("dynamic_type", "uint8")));
  Node* fused = patch.add_node("QMatMul", p->inputs(), 3, attrs, "octet", p->name() + "_rows");
  for (Node* q : r.qmatmuls)
    for (size_t i = 0; i < 3; ++i) patch.set_input(q, i, fused->output(i));
  patch.remove_node(p);
  if (!ctx.apply(patch)) return false;
  ctx.count("octet.QMatMul -> output quantized per row");
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  RemovedNodes removed;
  bool changed = false;
  for (Node* p : g.nodes()) {
    if (removed.contains(p) || !candidate(p)) continue;
    QuantizedReaders r = quantized_readers(p->output(0), /*channel_scale_ok=*/true);
    bool per_row = false;
    if (r.qmatmuls.empty()) {
      r = per_token_readers(p->output(0));
      per_row = true;
    }
    if (r.qmatmuls.empty() || r.others || r.dead) continue;
    if (per_row ? rewrite_per_row(g, ctx, p, r) : rewrite(g, ctx, p, r)) {
      removed.add({p});
      changed = true;
    }
  }
  return changed;
}

}  // namespace

Pass fuse_qmatmul_output_quantize() { return {"fuse_qmatmul_output_quantize", run}; }

}  // namespace octet::passes
