#include "kernels/cpu/thread_scratch.h"

#include <algorithm>
#include <array>
#include <memory>

#include "core/tensor.h"

namespace octet::cpu {

void* thread_scratch(Scratch slot, size_t bytes) {
  thread_local std::array<std::shared_ptr<Buffer>, static_cast<size_t>(Scratch::kCount)> buffers;
  std::shared_ptr<Buffer>& b = buffers[static_cast<size_t>(slot)];
  // At least 64 bytes, so a zero-size request still gets a valid, aligned pointer.
  if (!b || b->size() < bytes) b = Buffer::allocate_uninitialized(std::max<size_t>(bytes, 64));
  return b->mutable_data();
}

}  // namespace octet::cpu
