// The matcher behind fuse_attention (fuse_attention.cpp): recognizes one multi-head
// attention block as exporters write it, anchored at its Softmax, and proves every detail
// the fused octet.Attention relies on. See fuse_attention.cpp for the patterns.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "passes/pass.h"
#include "passes/pattern.h"

namespace octet::passes::attention {

struct Match {
  Value *q = nullptr, *k = nullptr, *v = nullptr;  // the projections, before the head split
  Value* mask = nullptr;                           // additive mask or nullptr
  int64_t heads = 0;
  double scale = 1;
  bool causal = false;
  bool seq_first = false;  // nn.MultiheadAttention's [S, B*H, D] form
  Node* softmax = nullptr;
  // The final Reshape back to channels. When its result is exactly Y's shape it is
  // swallowed and its output replaced; otherwise (seq_first: [S*B, E]) it stays and reads Y.
  Node* final_reshape = nullptr;
  bool keep_final_reshape = false;
  // Quantized attention (docs/quantization.md, octet.QAttention): per-tensor fake
  // quantizations on both inputs of Q.K^T and of P.V, all four or none. Q's is of Q after
  // any scaling the match folded into `scale`; q_prescale is that factor, which divides
  // Q's quantization scale when the fused op quantizes the unscaled Q.
  bool quantized = false;
  FakeQuant q_quant, k_quant, v_quant, p_quant;
  // octet quantize's default --attention int8: the softmax written out as
  //   E = Exp(S - ReduceMax(S)), Q/DQ(E) . V, then Div by ReduceSum(E)
  // (p_quant is E's), which the fused op computes with row_probabilities = 1. `softmax`
  // is then the Exp.
  bool row_probabilities = false;
  double q_prescale = 1;
  // Every node of the chain (a kept final Reshape excluded). The pass checks that their
  // results have no reader outside the chain except shape computations that die with it.
  std::vector<Node*> nodes;
};

// The written-out softmax of octet quantize --attention int8 (the default), from its Exp:
// the scores S (Exp reads S - ReduceMax(S) over the last axis), E's QuantizeLinear and its
// ReduceSum (E's only two readers). Shared with fuse_qbmm_attention.
struct RowSoftmax {
  Value* scores = nullptr;
  Node *max = nullptr, *sub = nullptr, *sum = nullptr, *quantize = nullptr;
};
std::optional<RowSoftmax> row_softmax(Node* exp);

// The product (E . V) of the row form divided by ReduceSum(E) (`rows`' sum): the Div's
// output, the Div appended to `nodes`; `mixed` itself without `rows`; nullptr when the
// product is not read by exactly that Div.
Value* divided_by_row_sums(Value* mixed, const std::optional<RowSoftmax>& rows, std::vector<Node*>& nodes);

// `v` through a fake quantization whose pair belongs to the chain alone (the quantized
// value and the dequantized one each read once): the float tensor quantized, or nullptr.
Value* through_fake_quant(Value* v, FakeQuant& fq, bool allow_int16 = false);

// Replaces the chain `m` describes with octet.Attention / octet.QAttention (fuse_attention.cpp);
// false, graph untouched, when a reader outside the chain forbids it. `removed` gets the
// removed nodes.
bool apply(Graph& g, PassContext& ctx, const Match& m, std::vector<Node*>& removed);

// Fills `m` when `softmax` is the Softmax of a fusable attention block, or the Exp of one
// written out for per-row probabilities (Match::row_probabilities).
bool match(Node* softmax, Match& m);

}  // namespace octet::passes::attention
