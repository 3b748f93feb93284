// peak_rss_bytes / current_rss_bytes: what `octet bench` reports as peak_rss_mb / rss_mb.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "runtime/process_memory.h"

namespace octet {
namespace {

TEST(ProcessMemory, PeakCoversCurrentAndGrowsWithTouchedMemory) {
  const uint64_t before = peak_rss_bytes();
  ASSERT_GT(before, 0u);
  ASSERT_GT(current_rss_bytes(), 0u);
  EXPECT_GE(peak_rss_bytes(), current_rss_bytes() / 2);  // loose: both are sampled, not atomic
  // Touch 64 MiB more than the process ever held: the high-water mark must follow.
  std::vector<char> block(before + (64u << 20));
  std::memset(block.data(), 1, block.size());
  EXPECT_GE(current_rss_bytes(), block.size());
  EXPECT_GE(peak_rss_bytes(), before + (64u << 20));
  EXPECT_EQ(block[block.size() / 2], 1);
}

}  // namespace
}  // namespace octet
