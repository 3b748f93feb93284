#include "kernels/ref/ref_shape_common.h"

#include "core/sizes.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace octet {
namespace ref_shape {

int64_t normalize_axis(const KernelContext& ctx, int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank)
    ctx.fail(what, " ", axis, " is out of range for rank ", rank, " (valid: [", -rank, ", ",
             rank - 1, "])");
  return axis < 0 ? axis + rank : axis;
}

int64_t checked_numel(const KernelContext& ctx, const std::vector<int64_t>& shape) {
  return octet::checked_numel(shape, ctx.node().describe());
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

std::vector<int64_t> read_ints(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (!dtype_is_integer(t.dtype()) || dtype_bits(t.dtype()) < 8)
    ctx.fail(what, " must be an integer tensor, got ", t.describe());
  if (t.rank() > 1) ctx.fail(what, " must be a 1-D tensor, got ", t.describe());
  return t.to_int64_vector();
}

Tensor reshaped(const Tensor& t, std::vector<int64_t> shape) {
  if (t.dtype() == DType::String) return Tensor::strings(std::move(shape), t.string_data());
  return Tensor(t.dtype(), std::move(shape), t.buffer());
}

namespace {
template <typename T>
void put(Tensor& t, T v) {
  std::memcpy(t.mutable_raw(), &v, sizeof v);
}

// A double cast to an integer type without the undefined behaviour of out-of-range
// casts: NaN becomes 0, values beyond the range saturate.
template <typename T>
T saturate(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}
}  // namespace

Tensor scalar_of_dtype(const KernelContext& ctx, DType dtype, double value) {
  Tensor t(dtype, {});
  switch (dtype) {
    case DType::Float32: put(t, static_cast<float>(value)); break;
    case DType::Float64: put(t, value); break;
    case DType::Float16: put(t, float_to_half(static_cast<float>(value))); break;
    case DType::BFloat16: put(t, float_to_bfloat16(static_cast<float>(value))); break;
    case DType::Int8: put(t, saturate<int8_t>(value)); break;
    case DType::Int16: put(t, saturate<int16_t>(value)); break;
    case DType::Int32: put(t, saturate<int32_t>(value)); break;
    case DType::Int64: put(t, saturate<int64_t>(value)); break;
    case DType::UInt8: put(t, saturate<uint8_t>(value)); break;
    case DType::UInt16: put(t, saturate<uint16_t>(value)); break;
    case DType::UInt32: put(t, saturate<uint32_t>(value)); break;
    case DType::UInt64: put(t, saturate<uint64_t>(value)); break;
    case DType::Bool: put(t, static_cast<uint8_t>(value != 0)); break;
    default: ctx.fail("cannot make a ", dtype_name(dtype), " constant from the float ", value);
  }
  return t;
}

// ---------------------------------------------------------------- ElementWriter

ElementWriter::ElementWriter(DType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)), numel_(shape_numel(shape_)), bits_(dtype_bits(dtype)) {
  checked_tensor_bytes(dtype_, shape_, "output");
  if (dtype_ == DType::String)
    strings_.resize(static_cast<size_t>(numel_));
  else
    out_ = Tensor(dtype_, shape_);
  OCTET_ASSERT(dtype_ == DType::String || bits_ == 2 || bits_ == 4 || bits_ % 8 == 0,
               "unsupported dtype ", dtype_name(dtype_));
}

namespace {
// Fixed-size element copies, so that memcpy compiles to a single load and store.
template <size_t Size>
void copy_fixed(uint8_t* dst, const uint8_t* src, int64_t src_index, int64_t stride, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(dst + i * Size, src + (src_index + i * stride) * static_cast<int64_t>(Size), Size);
}
}  // namespace

void ElementWriter::copy(const Tensor& src, int64_t src_index, int64_t src_stride, int64_t dst,
                         int64_t n) {
  if (n <= 0) return;
  OCTET_ASSERT(src.dtype() == dtype_, "copying ", src.describe(), " into ", dtype_name(dtype_));
  OCTET_ASSERT(dst >= 0 && dst + n <= numel_, "write out of range");
  int64_t last = src_index + (n - 1) * src_stride;
  OCTET_ASSERT(src_index >= 0 && src_index < src.numel() && last >= 0 && last < src.numel(),
               "read out of range: ", src_index, "..", last, " of ", src.describe());
  if (dtype_ == DType::String) {
    const auto& in = src.string_data();
    for (int64_t i = 0; i < n; ++i) strings_[dst + i] = in[src_index + i * src_stride];
    return;
  }
  uint8_t* d = out_.mutable_raw();
  const uint8_t* s = src.raw();
  if (bits_ < 8) {  // packed 4- or 2-bit elements
    for (int64_t i = 0; i < n; ++i)
      set_packed(d, dst + i, bits_, get_packed(s, src_index + i * src_stride, bits_));
    return;
  }
  const int64_t size = bits_ / 8;
  if (src_stride == 1) {
    std::memcpy(d + dst * size, s + src_index * size, static_cast<size_t>(n * size));
    return;
  }
  d += dst * size;
  switch (size) {
    case 1: copy_fixed<1>(d, s, src_index, src_stride, n); break;
    case 2: copy_fixed<2>(d, s, src_index, src_stride, n); break;
    case 4: copy_fixed<4>(d, s, src_index, src_stride, n); break;
    case 8: copy_fixed<8>(d, s, src_index, src_stride, n); break;
    case 16: copy_fixed<16>(d, s, src_index, src_stride, n); break;
    default:
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(d + i * size, s + (src_index + i * src_stride) * size, static_cast<size_t>(size));
  }
}

void ElementWriter::fill(const Tensor& value, int64_t dst, int64_t n) {
  OCTET_ASSERT(value.numel() >= 1, "fill value is empty");
  if (n <= 0) return;
  copy(value, 0, 1, dst, 1);
  if (dtype_ == DType::String) {
    for (int64_t i = 1; i < n; ++i) strings_[dst + i] = strings_[dst];
    return;
  }
  // Doubling copies from the already filled part: a few memcpys instead of n small ones.
  for (int64_t filled = 1; filled < n;) {
    int64_t chunk = std::min(filled, n - filled);
    copy(out_, dst, 1, dst + filled, chunk);
    filled += chunk;
  }
}

Tensor ElementWriter::finish() {
  if (dtype_ == DType::String) return Tensor::strings(shape_, std::move(strings_));
  return std::move(out_);
}

// ---------------------------------------------------------------- copy_view

void copy_view(ElementWriter& out, int64_t dst, const Tensor& src, int64_t base,
               const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  OCTET_ASSERT(shape.size() == strides.size(), "view rank mismatch");
  const int64_t total = shape_numel(shape);
  if (total == 0) return;
  if (shape.empty()) {
    out.copy(src, base, 1, dst, 1);
    return;
  }
  // The innermost dim is copied as one strided run; an odometer walks the outer dims.
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t inner = shape[rank - 1];
  std::vector<int64_t> index(rank, 0);
  int64_t offset = base;
  for (int64_t row = 0; row < total / inner; ++row) {
    out.copy(src, offset, strides[rank - 1], dst + row * inner, inner);
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++index[d] < shape[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (shape[d] - 1);
      index[d] = 0;
    }
  }
}

}  // namespace ref_shape
}  // namespace octet
