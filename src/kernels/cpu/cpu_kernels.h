// The optimized CPU kernels, registered by family. Each family's kernels are tested
// against their reference twins (tests/unit/cpu_*_test.cpp) on edge shapes and on every
// ISA level the machine has (see kernels/dispatch/cpu_features.h).
#pragma once

#include "kernels/kernel.h"

namespace octet {

// Fills the optimized registry: every family below.
void register_cpu_kernels(KernelRegistry& r);

void register_cpu_grouped_attention(KernelRegistry& r);  // octet.GroupedAttention, octet.CachedAttention, float32 (grouped_attention.cpp)
void register_cpu_attention(KernelRegistry& r);  // octet.Attention, float32 (attention.cpp); calls the next
void register_cpu_qattention(KernelRegistry& r);  // octet.QAttention, float32 (qattention*.cpp)
namespace cpu {
void register_matmul_nbits(KernelRegistry& r);  // com.microsoft.MatMulNBits (matmul_nbits.cpp)
}

}  // namespace octet
