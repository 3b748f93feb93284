#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/simd_kernels.h"

namespace octet {

void register_cpu_kernels(KernelRegistry& r) {
  (void)r;  // families are added here as they land
  cpu::register_cpu_simd_kernels(r);
}

}  // namespace octet
