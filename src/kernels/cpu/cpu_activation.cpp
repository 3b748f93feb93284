// Elementwise float32 activations: Gelu (ai.onnx opset 20 and octet.Gelu, approximate
// none|tanh), Tanh, Erf, Sigmoid, Sqrt, Relu, octet.SwiGLU, Exp (the softmax octet quantize writes out
// where attention does not fuse back: 1500-position Whisper attention spent 254 ms in the
// reference Exp). The math is in simd/vec_impl.h.
#include <algorithm>
#include <string>
#include <vector>

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

// octet.SwiGLU: one pass over gate and up (simd/vec_impl.h swiglu_row), where the unfused
// graph ran a Split copy (the merged gate/up projection's), a Sigmoid and two Muls, each
// a kernel call and a pass over memory: SmolLM2's decode step has 30 of them.
void swiglu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor* u = ctx.optional_input(1);
  if (x.dtype() != DType::Float32 || x.rank() < 1 || ctx.num_inputs() > 2) return run_reference(ctx);
  std::vector<int64_t> shape = x.shape();
  int64_t width = 0, stride = 0, up = 0;  // elements per row, row stride in X, U's offset in a row
  if (u) {
    if (u->dtype() != DType::Float32 || u->shape() != x.shape()) return run_reference(ctx);  // its error
    width = stride = std::max<int64_t>(x.shape().back(), 1);
  } else {
    if (x.shape().back() % 2 != 0) return run_reference(ctx);
    shape.back() /= 2;
    width = up = shape.back(), stride = x.shape().back();
  }
  Tensor& y = ctx.allocate_output_uninitialized(0, DType::Float32, shape);
  if (y.numel() == 0) return;
  const int64_t rows = y.numel() / width;
  const float* px = x.data<float>();
  const float* pu = u ? u->data<float>() : px + up;
  float* py = y.mutable_data<float>();
  const auto fn = vec_ops().swiglu;
  // Row chunks of about kChunk elements, so a thread team shares a prefill's [128, 1536].
  const int64_t per = std::max<int64_t>(1, kChunk / width);
  parallel_ranges(ctx, (rows + per - 1) / per, y.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin * per; r < std::min(rows, end * per); ++r)
      fn(px + r * stride, pu + r * stride, py + r * width, width);
  });
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
  r.add("octet", "SwiGLU", KernelDef{swiglu_kernel, prepare_float32});
}

}  // namespace octet::cpu
