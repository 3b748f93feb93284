// Applies SmoothQuant decisions to a float graph: the group's weights get their K rows
// multiplied by s, and X is divided by s where that is exact and touches nothing else.
//
// Where 1/s goes, in this order (docs/quantization.md §5):
//   1. into X's producer, when it owns per-channel parameters: LayerNormalization over the
//      last axis (gamma and beta), Mul by a constant vector along the last axis (RMSNorm's
//      weight), Add of a constant vector after such a Mul (a LayerNorm written out), or a
//      MatMul/Gemm with a constant weight (its output columns and bias);
//   2. into a copy of that producer, made for the group's path, when X has other readers
//      (BERT's residual reads the LayerNorm output too) and the producer is elementwise;
//   3. otherwise into an explicit Mul(X, 1/s) in front of the group.
// On the way up, the scale passes exactly through ops that move elements without mixing
// channels (Transpose keeping the last axis last, reshapes keeping it K, Gather on another
// axis, Identity): nn.MultiheadAttention's transpose, ViT's class-token select.
// Constants are never changed in place: every scaled parameter is a new initializer, and
// the old one is dropped only when nothing reads it any more. So a constant shared with
// other nodes (a GeLU's 0.5) keeps its value for them, and a scalar is never reshaped
// into a vector: a fold is taken only when the parameter varies along X's last axis alone.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/smoothquant.h"

namespace octet::quant {

struct SmoothFold {
  std::string activation;  // X
  std::string where;       // "gamma and beta of LayerNormalization 'ln'", ...
};

// Applies every decision with `smoothed` set, in order; each in one GraphPatch. Node and
// value names are looked up in `graph`, so decisions made on one load of a model apply to
// another load of the same file.
std::vector<SmoothFold> apply_smoothing(Graph& graph, const std::vector<SmoothingDecision>& decisions);

}  // namespace octet::quant
