// weight_pages / weight_pages_exact (src/kernels/cpu/weight_pages.h): zero-filled, writable,
// 64-byte aligned buffers of the size asked for, alive as long as the Buffer is (exact ones
// start on a 2 MiB boundary, their mapping's own); odd sizes and many small ones sharing regions.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/cpu/weight_pages.h"

namespace octet {
namespace {

void expect_zeroed_and_writable(const std::shared_ptr<Buffer>& b, size_t bytes) {
  ASSERT_TRUE(b);
  EXPECT_EQ(b->size(), bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % 64, 0u);
  uint8_t* p = b->mutable_data();
  for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(p[i], 0) << "byte " << i << " of " << bytes;
  for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(i * 7 + 1);
  for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(p[i], static_cast<uint8_t>(i * 7 + 1));
}

TEST(CpuWeightPages, ExactBuffersOfAnySize) {
  for (size_t bytes : {size_t{1}, size_t{4097}, (size_t{3} << 20) + 5, size_t{8} << 20}) {
    auto b = cpu::weight_pages_exact(bytes);
    expect_zeroed_and_writable(b, bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % (size_t{2} << 20), 0u) << bytes;
  }
}

TEST(CpuWeightPages, SharedRegionsKeepBuffersApart) {
  std::vector<std::shared_ptr<Buffer>> kept;
  for (size_t i = 0; i < 40; ++i) kept.push_back(cpu::weight_pages((size_t{1} << 20) + i * 4099));
  for (size_t i = 0; i < kept.size(); ++i) expect_zeroed_and_writable(kept[i], (size_t{1} << 20) + i * 4099);
}

}  // namespace
}  // namespace octet
