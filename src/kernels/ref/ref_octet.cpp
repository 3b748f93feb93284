// Reference kernels for the octet-domain fused ops (see src/ops/octet_ops.cpp).
//
// Each one runs the ai.onnx reference kernels it replaces, in the same order and with the
// same roundings, so the oracle for a fused op is the unfused graph by construction:
// octet.MatMulBias is bit-identical to MatMul followed by Add, octet.Gelu to ONNX Gelu,
// octet.RMSNormalization to ONNX RMSNormalization. Optimized kernels are tested
// against these.
#include "kernels/kernel.h"
#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_math_dtype.h"

namespace octet {
namespace {

KernelFn onnx_kernel(const char* op) {
  KernelFn fn = KernelRegistry::reference().find("", op);
  OCTET_ASSERT(fn, "no reference kernel for ai.onnx ", op);
  return fn;
}

void gelu_kernel(KernelContext& ctx) { onnx_kernel("Gelu")(ctx); }

void rms_norm_kernel(KernelContext& ctx) { onnx_kernel("RMSNormalization")(ctx); }

void matmul_bias_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor& bias = ctx.input(2);
  if (b.rank() < 2) ctx.fail("B ", b.describe(), " must have rank >= 2");
  const int64_t n = b.shape().back();
  if (bias.rank() != 1 || bias.shape()[0] != n)
    ctx.fail("bias ", bias.describe(), " must be 1-D with N = ", n, " elements");
  if (bias.dtype() != a.dtype()) ctx.fail("bias is ", bias.describe(), " but A is ", a.describe());

  KernelContext mm(ctx.node(), {&a, &b});
  onnx_kernel("MatMul")(mm);
  Tensor y = std::move(mm.outputs()[0]);
  ref::dispatch<ref::FloatTypes>(ctx, a.dtype(), "A", [&](auto tag) {
    using S = typename decltype(tag)::type;
    S* out = ref::data_as<S>(y);
    const S* pb = ref::data_as<S>(bias);
    const int64_t count = y.numel();
    for (int64_t i = 0; i < count; ++i)
      out[i] = ref::store<S>(ref::load(out[i]) + ref::load(pb[i % n]));
  });
  ctx.set_output(0, std::move(y));
}

}  // namespace

void register_ref_octet(KernelRegistry& r) {
  r.add("octet", "Gelu", gelu_kernel);
  r.add("octet", "MatMulBias", matmul_bias_kernel);
  r.add("octet", "RMSNormalization", rms_norm_kernel);
  register_ref_attention(r);
}

}  // namespace octet
