// The reduction/normalization reference family: reductions live in ref_reduce.cpp, TopK in
// ref_topk.cpp, Softmax and the norms in ref_normalization.cpp; the scans CumSum/CumProd
// and Trilu here.
#include <cstring>

#include "kernels/kernel.h"
#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_math_broadcast.h"
#include "kernels/ref/ref_math_dtype.h"
#include "kernels/ref/ref_math_reduce.h"

namespace octet {
namespace ref {
namespace {

// A scalar integer input (rank 0, or one element), e.g. CumSum's axis or Trilu's k.
int64_t scalar_int_input(const KernelContext& ctx, size_t index, const char* what) {
  const Tensor& t = ctx.input(index);
  if (t.dtype() != DType::Int32 && t.dtype() != DType::Int64)
    ctx.fail(what, " must be int32 or int64, got ", dtype_name(t.dtype()));
  if (t.numel() != 1) ctx.fail(what, " must be a scalar, got shape ", shape_to_string(t.shape()));
  return t.to_int64_vector()[0];
}

// CumSum / CumProd along `axis` (second input); exclusive leaves out the current element,
// reverse runs from the end. Floats accumulate in double, integers wrap in 64 bits.
template <bool is_sum>
void scan_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  using ScanTypes = ConcatTypes<FloatTypes, Types<int32_t, int64_t, uint32_t, uint64_t>>::type;
  dispatch<ScanTypes>(ctx, x.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Acc = std::conditional_t<is_float_storage_v<S>, double,
                                   std::conditional_t<std::is_signed_v<S>, int64_t, uint64_t>>;
    const int64_t axis = normalize_axis(ctx, scalar_int_input(ctx, 1, "axis"), x.rank());
    const bool exclusive = ctx.node().attr_int("exclusive", 0) != 0;
    const bool reverse = ctx.node().attr_int("reverse", 0) != 0;
    const int64_t outer = product_of_dims(x.shape(), 0, axis);
    const int64_t n = x.shape()[axis];
    const int64_t inner = product_of_dims(x.shape(), axis + 1, x.shape().size());
    Tensor& out = ctx.allocate_output(0, x.dtype(), x.shape());
    const S* in = data_as<S>(x);
    S* po = data_as<S>(out);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        Acc acc = is_sum ? 0 : 1;
        for (int64_t step = 0; step < n; ++step) {
          const int64_t k = reverse ? n - 1 - step : step;
          const int64_t at = (o * n + k) * inner + i;
          const Acc v = static_cast<Acc>(load(in[at]));
          if (!exclusive) acc = is_sum ? acc + v : acc * v;
          if constexpr (is_float_storage_v<S>) po[at] = store_double<S>(acc);
          else po[at] = static_cast<S>(acc);
          if (exclusive) acc = is_sum ? acc + v : acc * v;
        }
      }
    }
  });
}

// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two
// dims and zeroes the rest. Works on raw bytes, so every fixed-width dtype is supported.
void trilu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2, got shape ", shape_to_string(x.shape()));
  const int bits = dtype_bits(x.dtype());
  if (bits < 8) ctx.fail("input dtype ", dtype_name(x.dtype()), " is not supported");
  const int64_t k = ctx.has_input(1) ? scalar_int_input(ctx, 1, "k") : 0;
  const bool upper = ctx.node().attr_int("upper", 1) != 0;
  const size_t elem = static_cast<size_t>(bits / 8);
  const int64_t rows = x.shape()[x.rank() - 2];
  const int64_t cols = x.shape()[x.rank() - 1];
  const int64_t batch = product_of_dims(x.shape(), 0, x.shape().size() - 2);
  Tensor& out = ctx.allocate_output(0, x.dtype(), x.shape());  // zero-filled
  const uint8_t* in = x.raw();
  uint8_t* po = out.mutable_raw();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const bool keep = upper ? (j - i >= k) : (j - i <= k);
        if (!keep) continue;
        const size_t at = static_cast<size_t>((b * rows + i) * cols + j) * elem;
        std::memcpy(po + at, in + at, elem);
      }
}

}  // namespace
}  // namespace ref

void register_ref_reduce_norm(KernelRegistry& r) {
  ref::register_reductions(r);
  ref::register_sorting(r);
  ref::register_normalization(r);
  r.add("", "CumSum", ref::scan_kernel<true>);
  r.add("", "CumProd", ref::scan_kernel<false>);
  r.add("", "Trilu", ref::trilu_kernel);
}

}  // namespace octet
