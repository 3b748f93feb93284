// Internal to the reduction/normalization reference family: the per-file registration
// functions that register_ref_reduce_norm() calls.
#pragma once

#include "kernels/kernel.h"

namespace octet::ref {

void register_reductions(KernelRegistry& r);    // ref_reduce.cpp: Reduce*, ArgMax/ArgMin
void register_sorting(KernelRegistry& r);       // ref_topk.cpp: TopK
void register_normalization(KernelRegistry& r);  // ref_normalization.cpp: Softmax, LayerNorm, RMSNorm

}  // namespace octet::ref
