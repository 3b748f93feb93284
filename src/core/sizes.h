// Element counts and byte sizes of tensors, overflow-checked in one place.
//
// Shapes reach octet from files (dims, .npy headers), from tensor data (a Tile's repeats,
// a ConstantOfShape's shape, an Expand's target) and from inference, so a product of dims
// can overflow int64 and a count times an element size can overflow size_t. An
// overflowed size allocates a small buffer that a kernel then writes past, or hands a
// library (oneDNN) dims it divides by after overflowing itself. Every size memory is
// sized from, and every shape handed to a library, goes through these functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace octet {

// The largest tensor octet sizes memory for: 2^47 bytes (128 TiB), the whole user address
// space of x86-64 and AArch64, so nothing larger can be allocated anyway. Keeping every
// byte count at or below it leaves room for alignment, offsets and sums of a few sizes,
// and keeps element counts far from int64's limit in any library's index math.
inline constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 47;

// The product of the dims; nullopt when a dim is negative or the product overflows int64.
std::optional<int64_t> try_numel(const std::vector<int64_t>& shape);
// Bytes for n elements of `dtype` (sub-byte types packed, rounded up); nullopt when n is
// negative or the count exceeds kMaxTensorBytes. Strings have no bytes in the buffer (0)
// but are held to the same limit for their std::string elements.
std::optional<uint64_t> try_storage_bytes(DType dtype, int64_t n);
// The bytes n elements would take with no limit but uint64's: for file readers that compare
// what a header claims with the data really there (and say so), never to size memory.
std::optional<uint64_t> claimed_storage_bytes(DType dtype, int64_t n);
// Bytes of a tensor of this dtype and shape; nullopt as for the two above.
std::optional<uint64_t> try_tensor_bytes(DType dtype, const std::vector<int64_t>& shape);

// The same, failing with a message that starts with `what` ("node 'n' (Tile): output 0",
// "input 'x'") and says which limit was passed.
int64_t checked_numel(const std::vector<int64_t>& shape, const std::string& what);
size_t checked_tensor_bytes(DType dtype, const std::vector<int64_t>& shape, const std::string& what);

}  // namespace octet
