// share_work (src/kernels/cpu/work_sharing.h): every item of [0, count) run exactly once,
// in ranges of at most `chunk` (or all of it in one call), whatever the thread count, back-to-back jobs (the helpers'
// generation handover) and callers on several threads at once (one job at a time; the
// others run alone).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "kernels/cpu/work_sharing.h"

namespace octet {
namespace {

void expect_each_once(int threads, int64_t count, int64_t chunk) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
  std::atomic<bool> too_long{false};
  auto fn = [&](int64_t b, int64_t e) {
    if ((e - b > chunk && !(b == 0 && e == count)) || b >= e) too_long = true;
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
  };
  cpu::share_work(threads, count, chunk, fn);
  EXPECT_FALSE(too_long) << "threads " << threads << " count " << count << " chunk " << chunk;
  for (int64_t i = 0; i < count; ++i)
    ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "item " << i << " threads " << threads << " count " << count
                                                      << " chunk " << chunk;
}

TEST(CpuWorkSharing, EveryItemOnceAtEveryThreadCount) {
  for (int threads : {1, 2, 3, 8})
    for (int64_t count : {0, 1, 2, 7, 100, 3073})
      for (int64_t chunk : {1, 3, 64, 5000}) expect_each_once(threads, count, chunk);
}

TEST(CpuWorkSharing, ManyJobsBackToBack) {  // the generation handover, many times over
  for (int j = 0; j < 2000; ++j) expect_each_once(2, 37 + j % 5, 1 + j % 4);
}

TEST(CpuWorkSharing, CallersOnSeveralThreads) {
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([] {
      for (int j = 0; j < 200; ++j) expect_each_once(2, 50 + j % 13, 2);
    });
  for (auto& c : callers) c.join();
}

}  // namespace
}  // namespace octet
