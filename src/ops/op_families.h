// Each op family registers its ops in one function; registry.cpp calls them all.
// Adding a family: declare it here, define it in its own file, call it in registry.cpp.
#pragma once

namespace octet {

class OpRegistry;

void register_elementwise_ops(OpRegistry& r);   // unary/binary/variadic math, logic, Cast, Where
void register_reduce_norm_ops(OpRegistry& r);   // Softmax, reductions, LayerNorm/RMSNorm, CumSum, Trilu
void register_shape_ops(OpRegistry& r);         // Shape, Reshape, Concat, Slice, Gather, ...
void register_linalg_ops(OpRegistry& r);        // MatMul, Gemm, Conv, Einsum
void register_quant_ops(OpRegistry& r);         // Q/DQ, DynamicQuantizeLinear, integer matmuls, MatMulNBits
void register_vision_ops(OpRegistry& r);        // BatchNormalization, Resize (vision_ops.cpp)
void register_octet_ops(OpRegistry& r);         // octet.Gelu, octet.MatMulBias, octet.RMSNormalization (fusions)
void register_octet_grouped_attention_op(OpRegistry& r);  // octet.GroupedAttention, octet.CachedAttention (octet_grouped_attention.cpp)
void register_octet_attention_op(OpRegistry& r);  // octet.Attention, octet.QAttention (octet_attention.cpp; called by register_octet_ops)
void register_octet_quant_ops(OpRegistry& r);     // octet.QMatMul (octet_quant_ops.cpp; called by register_octet_ops)

}  // namespace octet
