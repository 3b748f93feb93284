// Reference kernel families; kernel_registry.cpp calls each. One file per family.
#pragma once

namespace octet {

class KernelRegistry;

void register_ref_elementwise(KernelRegistry& r);   // unary/binary/variadic math, logic, Cast, Where
void register_ref_reduce_norm(KernelRegistry& r);   // Softmax, reductions, TopK, LayerNorm/RMSNorm, CumSum, Trilu
void register_ref_shape(KernelRegistry& r);         // Shape, Reshape, Concat, Slice, Gather(ND), Scatter*, Constant, ...
void register_ref_linalg(KernelRegistry& r);        // MatMul, Gemm, Conv, Einsum
void register_ref_quant(KernelRegistry& r);         // Q/DQ, DynamicQuantizeLinear, integer matmuls, MatMulNBits
void register_ref_vision(KernelRegistry& r);        // BatchNormalization, Resize (ref_vision*.cpp)
void register_ref_octet(KernelRegistry& r);         // octet.Gelu, octet.MatMulBias, octet.RMSNormalization (fusions)
void register_ref_grouped_attention(KernelRegistry& r);  // octet.GroupedAttention, octet.CachedAttention (ref_grouped_attention.cpp)
void register_ref_attention(KernelRegistry& r);     // octet.Attention (ref_attention.cpp; called by register_ref_octet)
void register_ref_octet_quant(KernelRegistry& r);   // octet.QMatMul (ref_octet_quant.cpp; called by register_ref_octet)
void register_ref_qattention(KernelRegistry& r);    // octet.QAttention (ref_qattention.cpp; called by register_ref_attention)

}  // namespace octet
