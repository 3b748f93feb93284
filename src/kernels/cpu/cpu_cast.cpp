// Cast to float32 from the integer types whose every value float32 holds exactly (int8,
// uint8, int16, uint16) and from bool, and from int32, uint32 and int64 through double as
// the reference converts them (exact below 2^53, then one rounding to float; exporters cast
// attention masks and token counts from int64): a plain conversion loop the compiler
// vectorizes, split over threads like the other elementwise kernels. The reference kernel goes
// through double for every element, which costs ~10 ns each; a quantized embedding's
// gathered rows (passes/rewrites/gather_quantized_rows.cpp: Cast(int8 rows) * scales) pay
// that on every run. Every other pair of types runs the reference kernel, which also
// reports bad attributes; since these conversions are exact, the results are the
// reference's bit for bit.
#include "kernels/cpu/simd_kernels.h"

namespace octet::cpu {
namespace {

constexpr int64_t kChunk = 4096;
constexpr int64_t kFloat = 1;  // TensorProto FLOAT

bool exact_to_float(DType t) {
  return t == DType::Int8 || t == DType::UInt8 || t == DType::Int16 || t == DType::UInt16 || t == DType::Bool;
}

// The wider integers: the reference's conversion (through double) is reproduced exactly.
bool via_double_to_float(DType t) { return t == DType::Int32 || t == DType::UInt32 || t == DType::Int64; }

bool handled(DType t) { return exact_to_float(t) || via_double_to_float(t); }

template <class T>
void convert(const KernelContext& ctx, const T* x, float* y, int64_t n) {
  parallel_ranges(ctx, (n + kChunk - 1) / kChunk, n, [&](int64_t begin, int64_t end) {
    const int64_t from = begin * kChunk, to = std::min(n, end * kChunk);
    for (int64_t i = from; i < to; ++i) y[i] = static_cast<float>(static_cast<double>(x[i]));
  });
}

void cast_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (ctx.node().attr_int("to", 0) != kFloat || !handled(x.dtype())) return run_reference(ctx);
  Tensor& y = ctx.allocate_output_uninitialized(0, DType::Float32, x.shape());
  float* py = y.mutable_data<float>();
  const int64_t n = x.numel();
  switch (x.dtype()) {
    case DType::Int8: return convert(ctx, x.data<int8_t>(), py, n);
    case DType::UInt8: return convert(ctx, x.data<uint8_t>(), py, n);
    case DType::Int16: return convert(ctx, x.data<int16_t>(), py, n);
    case DType::UInt16: return convert(ctx, x.data<uint16_t>(), py, n);
    case DType::Int32: return convert(ctx, x.data<int32_t>(), py, n);
    case DType::UInt32: return convert(ctx, x.data<uint32_t>(), py, n);
    case DType::Int64: return convert(ctx, x.data<int64_t>(), py, n);
    default: return convert(ctx, reinterpret_cast<const uint8_t*>(x.raw()), py, n);  // bool: one byte, 0 or 1
  }
}

// Declines at session creation a Cast whose input is known to be another type.
bool prepare_cast(const Node& node, std::unique_ptr<KernelState>&) {
  const Value* x = node.input(0);
  if (!x || !x->type.known()) return true;
  return handled(x->type.dtype) && node.attr_int("to", 0) == kFloat;
}

}  // namespace

void register_cpu_cast(KernelRegistry& r) { r.add("", "Cast", KernelDef{cast_kernel, prepare_cast}); }

}  // namespace octet::cpu
