#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/dnnl_matmul.h"

namespace octet {

void register_cpu_kernels(KernelRegistry& r) {
  (void)r;  // families are added here as they land
  dnnl_cpu::register_matmul(r);  // MatMul, Gemm, octet.MatMulBias (oneDNN)
}

}  // namespace octet
