// LayerNormalization read by static octet.QMatMul nodes -> octet.LayerNormQuantize, whose
// uint8/int8 output those QMatMuls read (docs/quantization.md §2).
//
// Why (issue 20's profile): at two threads a small int8 product of a statically quantized
// encoder spent much of its time around the GEMM: the QMatMul quantized its float A in a
// parallel region of its own, then ran the primitive. The LayerNorm before it already
// touches every row: quantizing there, while the row is in cache, removes that pass and
// its fork/join. A SmoothQuant-smoothed encoder (MiniLM) also has a second LayerNorm of
// the same input with gamma / s, beta / s that only the QMatMul reads; it becomes the
// quantized branch of the original's node, so one pass over X writes both.
//
// Matched, for a LayerNormalization L over the last axis of a rank-known float32 X
// (stash_type 1, no Mean/InvStdDev outputs, Scale and B 1-D [K]) whose output is not a
// graph output or read by a subgraph:
// - "readers": the octet.QMatMul nodes reading L's output as A (input 0) and nowhere
//   else, static (a_scale a float32 scalar constant; a_zero_point absent or a uint8/int8
//   scalar constant), without a_channel_scale, all with the same a_scale / a_zero_point;
// - if every use of L's output is such a reader, and another LayerNormalization L2 of the
//   same X and epsilon (matched as L, with other readers) exists, the pair becomes
//   LayerNormQuantize(X, scale2, bias2, a_scale, a_zero_point, scale, bias) -> (Q, Y) with
//   Y replacing L2's output;
// - else, with at least one reader: LayerNormQuantize(X, scale, bias, a_scale,
//   a_zero_point) -> Q, plus Y replacing L's output when other nodes read it too.
// - per-token readers instead (dynamic QMatMuls: no a_scale / a_zero_point /
//   a_channel_scale, one dynamic_type; issue 15's per-token static mode): the same
//   shapes with LayerNormQuantize's per-row mode (dynamic_type, no y_scale), outputs
//   (Q, a_scale, a_zero_point, Y?); each reader takes them as its inputs 0, 1, 2.
// The readers then take Q as A. Q is exactly what each reader's own quantization of the
// float LayerNorm output was (the same row kernels, docs/quantization.md §2).
#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/quantized_readers.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

// A float32 1-D [k] value (a constant or not: the kernel reads it per run).
bool row_param(const Value* v, int64_t k) {
  if (!v) return true;
  const auto& d = v->type.dims;
  return v->type.dtype == DType::Float32 && d && d->size() == 1 && (*d)[0].constant() == k;
}

// L's normalized width K when it is a LayerNormalization this pass can take, else 0.
int64_t norm_width(const Node* n) {
  if (!is_op(n, "LayerNormalization") || n->outputs().size() > 1 || n->attr_int("stash_type", 1) != 1) return 0;
  const Value* x = n->input(0);
  if (!x || x->type.dtype != DType::Float32 || !x->type.dims || x->type.dims->empty()) return 0;
  const int64_t rank = static_cast<int64_t>(x->type.dims->size());
  const int64_t axis = n->attr_int("axis", -1);
  if (axis != -1 && axis != rank - 1) return 0;
  const auto k = x->type.dims->back().constant();
  if (!k || *k <= 0 || !row_param(n->input(1), *k) || !n->input(1) || !row_param(input_or_null(n, 2), *k)) return 0;
  const Value* y = n->output(0);
  if (!y || y->is_graph_output() || read_by_subgraph(y)) return 0;
  return *k;
}

// Another LayerNormalization of `quant`'s X with its epsilon, that this pass can take and
// that something other than a matching QMatMul reads: the float twin of a smoothed copy.
Node* float_twin(const Node* quant, const RemovedNodes& removed) {
  const float eps = quant->attr_float("epsilon", 1e-5f);
  for (const Use& u : quant->input(0)->uses()) {
    Node* n = u.node;
    if (n == quant || u.implicit || u.index != 0 || removed.contains(n) || !norm_width(n)) continue;
    if (n->attr_float("epsilon", 1e-5f) != eps) continue;
    const QuantizedReaders r = quantized_readers(n->output(0), false);
    if (r.others && !r.dead) return n;
  }
  return nullptr;
}

bool rewrite(Graph& g, PassContext& ctx, Node* norm, Node* twin, const QuantizedReaders& r, bool per_row) {
  import_octet_domain(g);
  GraphPatch patch = make_patch(g);
  const Node* q0 = r.qmatmuls[0];
  // Y (output 1) is the twin's output, or norm's own when other nodes read it.
  const Node* y_of = twin ? twin : (r.others ? norm : nullptr);
  std::vector<Value*> inputs = {y_of ? y_of->input(0) : norm->input(0),
                                y_of ? y_of->input(1) : norm->input(1),
                                y_of ? input_or_null(y_of, 2) : input_or_null(norm, 2),
                                per_row ? nullptr : q0->input(1), per_row ? nullptr : input_or_null(q0, 2)};
  if (twin) {
    inputs.push_back(norm->input(1));
    inputs.push_back(input_or_null(norm, 2));
  }
  while (!inputs.back()) inputs.pop_back();
  std::vector<Attribute> attrs = {Attribute::make_float("epsilon", norm->attr_float("epsilon", 1e-5f))};
  if (per_row) attrs.push_back(Attribute::make_string("dynamic_type", q0->attr_string("dynamic_type", "uint8")));
  // Per row: (Q, a_scale, a_zero_point, Y?); static: (Q, Y?).
  const size_t y_index = per_row ? 3 : 1;
  Node* fused = patch.add_node("LayerNormQuantize", inputs, y_of ? y_index + 1 : y_index, attrs, "octet",
                               norm->name() + "_quantized");
  for (Node* q : r.qmatmuls) {
    patch.set_input(q, 0, fused->output(0));
    if (per_row) {
      patch.set_input(q, 1, fused->output(1));
      patch.set_input(q, 2, fused->output(2));
    }
  }
  if (y_of) patch.replace_uses(y_of->output(0), fused->output(y_index));
  patch.remove_node(norm);
  if (twin) patch.remove_node(twin);
  if (!ctx.apply(patch)) return false;
  const std::string what = twin ? "LayerNorm pair -> one pass, float + quantized"
                           : y_of ? "LayerNorm -> float + quantized"
                                  : "LayerNorm -> quantized";
  ctx.count(per_row ? what + " (per row)" : what);
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  RemovedNodes removed;
  bool changed = false;
  for (Node* n : g.nodes()) {
    if (removed.contains(n) || !norm_width(n)) continue;
    QuantizedReaders r = quantized_readers(n->output(0), false);
    bool per_row = false;
    if (r.qmatmuls.empty()) {
      r = per_token_readers(n->output(0));
      per_row = true;
    }
    if (r.qmatmuls.empty() || r.dead) continue;
    Node* twin = r.others ? nullptr : float_twin(n, removed);
    if (rewrite(g, ctx, n, twin, r, per_row)) {
      removed.add({n});
      if (twin) removed.add({twin});
      changed = true;
    }
  }
  return changed;
}

}  // namespace

Pass fuse_layer_norm_quantize() { return {"fuse_layer_norm_quantize", run}; }

}  // namespace octet::passes
