// Placeholder until this family's reference kernels land (being written in parallel).
#include "kernels/kernel.h"
#include "kernels/ref/ref_families.h"

namespace octet {
void register_ref_quant(KernelRegistry&) {}
}  // namespace octet
