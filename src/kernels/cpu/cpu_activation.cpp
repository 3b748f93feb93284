// Elementwise float32 activations: Gelu (ai.onnx opset 20 and octet.Gelu, approximate
// none|tanh), Tanh, Erf, Sigmoid, Sqrt, Relu, Exp (the softmax octet quantize writes out
// where attention does not fuse back: 1500-position Whisper attention spent 254 ms in the
// reference Exp). The math is in simd/vec_impl.h.
#include <string>

#include "kernels/cpu/simd_kernels.h"
#include "kernels/cpu/vec_ops.h"

namespace octet::cpu {
namespace {

// Chunks small enough that a team of threads shares even a [128, 768] tensor, large
// enough that the per-chunk call is noise.
constexpr int64_t kChunk = 4096;

void run_unary(KernelContext& ctx, UnaryOp op) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::Float32) return run_reference(ctx);
  Tensor& y = ctx.allocate_output_uninitialized(0, DType::Float32, x.shape());
  const int64_t n = x.numel();
  const float* px = x.data<float>();
  float* py = y.mutable_data<float>();
  const UnaryFn fn = vec_ops().unary[static_cast<int>(op)];
  parallel_ranges(ctx, (n + kChunk - 1) / kChunk, n, [&](int64_t begin, int64_t end) {
    const int64_t from = begin * kChunk, to = std::min(n, end * kChunk);
    fn(px + from, py + from, to - from);
  });
}

template <UnaryOp Op>
void unary_kernel(KernelContext& ctx) {
  run_unary(ctx, Op);
}

void gelu_kernel(KernelContext& ctx) {
  const std::string approx = ctx.node().attr_string("approximate", "none");
  if (approx == "none") return run_unary(ctx, UnaryOp::GeluErf);
  if (approx == "tanh") return run_unary(ctx, UnaryOp::GeluTanh);
  run_reference(ctx);  // reports the bad attribute
}

}  // namespace

void register_cpu_activation(KernelRegistry& r) {
  r.add("", "Gelu", KernelDef{gelu_kernel, prepare_float32});
  r.add("octet", "Gelu", KernelDef{gelu_kernel, prepare_float32});
  r.add("", "Tanh", KernelDef{unary_kernel<UnaryOp::Tanh>, prepare_float32});
  r.add("", "Erf", KernelDef{unary_kernel<UnaryOp::Erf>, prepare_float32});
  r.add("", "Sigmoid", KernelDef{unary_kernel<UnaryOp::Sigmoid>, prepare_float32});
  r.add("", "Sqrt", KernelDef{unary_kernel<UnaryOp::Sqrt>, prepare_float32});
  r.add("", "Relu", KernelDef{unary_kernel<UnaryOp::Relu>, prepare_float32});
  r.add("", "Exp", KernelDef{unary_kernel<UnaryOp::Exp>, prepare_float32});
}

}  // namespace octet::cpu
