#include "kernels/cpu/cpu_kernels.h"

namespace octet {

void register_cpu_kernels(KernelRegistry& r) {
  (void)r;  // families are added here as they land
  register_cpu_attention(r);
}

}  // namespace octet
