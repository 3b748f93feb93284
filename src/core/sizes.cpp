#include "core/sizes.h"

#include "core/tensor.h"
#include "octet/error.h"

namespace octet {

std::optional<int64_t> try_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

std::optional<uint64_t> try_storage_bytes(DType dtype, int64_t n) {
  if (n < 0) return std::nullopt;
  // String tensors keep their elements outside the byte buffer, one std::string each:
  // no bytes, but the same limit on what those elements take.
  if (dtype == DType::String)
    return static_cast<uint64_t>(n) <= kMaxTensorBytes / sizeof(std::string) ? std::optional<uint64_t>(0) : std::nullopt;
  const uint64_t bits = static_cast<uint64_t>(dtype_bits(dtype));
  // n * bits cannot overflow once n is below the limit in bits: check that first.
  if (bits > 0 && static_cast<uint64_t>(n) > kMaxTensorBytes * 8 / bits) return std::nullopt;
  return (static_cast<uint64_t>(n) * bits + 7) / 8;
}

std::optional<uint64_t> claimed_storage_bytes(DType dtype, int64_t n) {
  if (n < 0) return std::nullopt;
  uint64_t bits;
  if (__builtin_mul_overflow(static_cast<uint64_t>(n), static_cast<uint64_t>(dtype_bits(dtype)), &bits) ||
      bits > UINT64_MAX - 7)
    return std::nullopt;
  return (bits + 7) / 8;
}

std::optional<uint64_t> try_tensor_bytes(DType dtype, const std::vector<int64_t>& shape) {
  auto n = try_numel(shape);
  return n ? try_storage_bytes(dtype, *n) : std::nullopt;
}

int64_t checked_numel(const std::vector<int64_t>& shape, const std::string& what) {
  for (int64_t d : shape)
    if (d < 0) fail(what, ": shape ", shape_to_string(shape), " has a negative dimension");
  auto n = try_numel(shape);
  if (!n)
    throw OutOfMemory(what + ": out of memory: shape " + shape_to_string(shape) + " has too many elements (more than 2^63)");
  return *n;
}

size_t checked_tensor_bytes(DType dtype, const std::vector<int64_t>& shape, const std::string& what) {
  const int64_t n = checked_numel(shape, what);
  auto bytes = try_storage_bytes(dtype, n);
  if (!bytes)
    throw OutOfMemory(what + ": out of memory: " + dtype_name(dtype) + shape_to_string(shape) +
                      " would need more than 2^47 bytes (128 TiB), more than a process can address");
  return static_cast<size_t>(*bytes);
}

}  // namespace octet
