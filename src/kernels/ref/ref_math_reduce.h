// Internal to the reduction/normalization reference family: the per-file registration
// functions that register_ref_reduce_norm() calls.
#pragma once

#include "kernels/kernel.h"

namespace octet::ref {

void register_reductions(KernelRegistry& r);    // ref_reduce.cpp: Reduce*, ArgMax/ArgMin
void register_sorting(KernelRegistry& r);       // ref_topk.cpp: TopK
void register_normalization(KernelRegistry& r);  // ref_normalization.cpp: Softmax, LayerNorm, RMSNorm

// Where a Reduce* node's axes come from: the optional second input for ReduceSum from opset
// 13 and for the others from opset 18; the `axes` attribute before (ops/reduce_norm_ops.cpp
// states the same per op). The reference kernels and the optimized ReduceSum/Mean read it.
inline bool reduce_axes_from_input(const Node& node) {
  return node.opset() >= (node.op_type() == "ReduceSum" ? 13 : 18);
}

}  // namespace octet::ref
