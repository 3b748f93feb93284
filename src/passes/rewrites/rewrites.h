// The rewrites, one rule per file in this folder; pipeline.cpp orders them.
#pragma once

#include "passes/pass.h"

namespace octet::passes {

// Cleanup (level 1)
Pass eliminate_dead_code();  // nodes nothing live reads; initializers nothing reads
Pass eliminate_noops();      // Identity, inference Dropout, Cast/CastLike to the same type
Pass fold_constants();       // nodes whose inputs are all constant, run by the reference kernels
Pass fold_shape_values();    // integer values whose symbolic contents are all known numbers

// Fusions (level 2)
Pass fold_batch_norm();    // inference BatchNormalization -> into the Conv/ConvTranspose before it, else Mul + Add
Pass gather_quantized_rows();  // Gather(DQ(int8 table), ids) -> dequantize only the gathered rows
Pass fuse_gelu_erf();      // 0.5*x*(1+erf(x/sqrt2))                    -> octet.Gelu(none)
Pass fuse_gelu_tanh();     // 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715x^3))) -> octet.Gelu(tanh)
Pass fuse_layer_norm();    // ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div[/Mul][/Add] -> LayerNormalization
Pass fuse_rms_norm();      // Pow/ReduceMean/Add/Sqrt/Div|Reciprocal/Mul[/Mul]       -> RMSNormalization
Pass fuse_rotary();        // x*cos + Concat(-x[..., D/2:], x[..., :D/2])*sin        -> octet.ApplyRotary
Pass fuse_blocked_dq_matmul();  // MatMul on blocked DQ(int4/int8 weight, axis 0)          -> com.microsoft.MatMulNBits
Pass fuse_qdq_matmul();    // MatMul/Gemm on Q/DQ'd activation and int8 weight [+ bias]  -> octet.QMatMul
Pass conv_patches_to_matmul();  // Conv with stride == kernel, no padding        -> patch Transpose + MatMul
// True when conv_patches_to_matmul takes `conv` in its int8 form (QDQ input and weight),
// which needs the weight's DequantizeLinear unfolded.
bool int8_patch_conv(Node* conv);
Pass fuse_matmul_bias();   // MatMul + Add(constant bias on the last axis)          -> octet.MatMulBias
Pass fuse_attention();     // head split, Q.K^T, scale, mask, Softmax, .V, merge      -> octet.Attention
Pass fuse_grouped_attention();  // Q.K^T over present K/V [repeat_kv], scale, [Where], [mask], Softmax, .V -> octet.GroupedAttention
Pass fuse_bmm_attention();  // BART-family per-head [B*H,S,D] bmm attention, [mask] -> octet.Attention / GroupedAttention
Pass fuse_qbmm_attention();  // the same, static int8 (Q/DQ on both products' inputs) -> octet.QAttention
Pass fuse_attention_slices();  // (Q)Attention on Slices/Split of packed QKV channels -> reads in place
Pass fuse_attention_qkv();     // Attention on three MatMulBias of one input    -> one packed projection
Pass fuse_qattention_qkv();    // QAttention on three QMatMul of one input   -> one packed int8 projection
Pass fold_matmul_output_scale(); // QMatMul/MatMulBias -> Mul(per-column constant) -> the factor in the weights
Pass fold_smoothing_mul();  // Mul(x, per-channel constant) read only by float-A QMatMuls -> their a_channel_scale
Pass fuse_layer_norm_quantize();  // LayerNorm [+ its smoothed twin] read by static QMatMuls -> octet.LayerNormQuantize
Pass fuse_qmatmul_output_quantize();  // QMatMul read only by static QMatMuls -> writes their 8-bit A
Pass fuse_qmatmul_layer_norm();  // QMatMul -> LayerNormQuantize (per row) of its output -> the QMatMul's epilogue
Pass fuse_matmul_epilogue();  // octet.MatMulBias + Gelu / + Add(same-shape residual) -> its activation/residual
Pass fuse_swiglu();  // (g * Sigmoid(g)) * u [g, u halves of one Split]        -> octet.SwiGLU
Pass fuse_nbits_split();  // MatMulNBits or float MatMul -> Split(last axis)       -> octet.MatMulNBits/MatMulBias writing the parts
Pass merge_sibling_matmuls();  // MatMulNBits / constant-weight MatMuls of one input     -> one product + Split
Pass transpose_to_reshape();
Pass eliminate_common_subexpressions();  // a node repeating an earlier one (same op, attributes, inputs) -> its outputs  // Transpose moving only size-1 axes                  -> Reshape (a view)

}  // namespace octet::passes
