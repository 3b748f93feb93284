#include "kernels/cpu/simd_kernels.h"

namespace octet::cpu {

void register_cpu_simd_kernels(KernelRegistry& r) {
  register_cpu_softmax_norm(r);
  register_cpu_activation(r);
  register_cpu_binary(r);
  register_cpu_cast(r);
  register_cpu_reduce(r);
  register_cpu_rotary(r);
}

void run_reference(KernelContext& ctx) {
  const KernelFn fn = KernelRegistry::reference().find(ctx.node().domain(), ctx.node().op_type());
  OCTET_ASSERT(fn, "no reference kernel for ", ctx.node().describe());
  fn(ctx);
}

bool prepare_float32(const Node& node, std::unique_ptr<KernelState>&) {
  for (const Value* v : node.inputs())
    if (v && v->type.known() && v->type.dtype != DType::Float32) return false;
  return true;
}

}  // namespace octet::cpu
