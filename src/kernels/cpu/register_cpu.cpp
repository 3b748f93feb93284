#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/cpu_data_movement.h"
#include "kernels/cpu/dnnl_conv.h"
#include "kernels/cpu/dnnl_matmul.h"
#include "kernels/cpu/dnnl_qmatmul.h"
#include "kernels/cpu/quant_ops.h"
#include "kernels/cpu/simd_kernels.h"

namespace octet {

void register_cpu_kernels(KernelRegistry& r) {
  cpu::register_cpu_simd_kernels(r);  // softmax, norms, GeLU, unary and binary elementwise
  dnnl_cpu::register_matmul(r);       // MatMul, Gemm, octet.MatMulBias (oneDNN)
  dnnl_cpu::register_conv(r);         // Conv, float32 1-D/2-D/3-D (oneDNN)
  dnnl_cpu::register_conv_transpose(r);  // ConvTranspose, float32 (oneDNN deconvolution)
  dnnl_cpu::register_qmatmul(r);      // octet.QMatMul (oneDNN int8)
  dnnl_cpu::register_qgemm_onnx(r);   // MatMulInteger, QLinearMatMul (oneDNN int8)
  dnnl_cpu::register_conv_integer(r); // ConvInteger (im2col + oneDNN int8)
  cpu::register_matmul_nbits(r);     // com.microsoft.MatMulNBits, 4/8-bit weights (GEMV + panel sgemm)
  cpu::register_cpu_quantize(r);      // QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
  cpu::register_cpu_norm_quantize(r); // octet.LayerNormQuantize (LayerNorm rows quantized in cache)
  register_cpu_attention(r);          // octet.Attention, octet.QAttention
  register_cpu_grouped_attention(r);  // octet.GroupedAttention, octet.CachedAttention
  cpu::register_cpu_data_movement(r); // Transpose, Slice, Concat, Split, Gather (any byte-sized dtype)
}

}  // namespace octet
