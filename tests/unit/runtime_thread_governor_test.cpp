// ThreadGovernor's decisions on a scripted clock and preemption count: quiet runs keep all
// threads; a window with a neighbour's rate of preemptions drops to one thread for the
// hold; the probe after it doubles the hold while contention lasts and a quiet window
// resets it. (The real signal's rates -- ~30/s quiet, ~2350/s contended on the 2-vCPU
// VM -- are in runtime/thread_governor.h.)
#include <gtest/gtest.h>

#include "runtime/thread_governor.h"

namespace octet {
namespace {

constexpr int64_t kMs = 1000000;

// A scripted process: run() advances the clock by the run's length and the preemption
// count by what the run suffered, as a session run would see them.
struct Script {
  int64_t now = 0;
  int64_t preempted = 0;
  ThreadGovernor governor;

  explicit Script(int threads = 2, bool adapt = true, ThreadGovernor::Settings s = {})
      : governor(threads, adapt, s, {[this] { return now; }, [this] { return preempted; }}) {}

  // One run of `ms` milliseconds during which the process was preempted `times` times;
  // returns the threads it ran on.
  int run(double ms, int64_t times) {
    const ThreadGovernor::Run r = governor.begin();
    now += static_cast<int64_t>(ms * kMs);
    preempted += times;
    governor.end(r);
    return r.threads;
  }
};

TEST(ThreadGovernor, QuietRunsKeepAllThreads) {
  Script s;
  // 30 preemptions a second, a 2.5 ms run: one now and then.
  for (int i = 0; i < 4000; ++i) EXPECT_EQ(s.run(2.5, i % 13 == 0 ? 1 : 0), 2) << "run " << i;
  EXPECT_EQ(s.governor.stats().reduced_runs, 0);
  EXPECT_EQ(s.governor.stats().holds, 0);
  EXPECT_EQ(s.governor.stats().runs, 4000);
}

TEST(ThreadGovernor, LongQuietRunsWithSomePreemptionsKeepAllThreads) {
  // A 500 ms run sees ~15 preemptions on a quiet machine: more than min_preemptions, far
  // below the contended rate.
  Script s;
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.run(500, 15), 2);
  EXPECT_EQ(s.governor.stats().holds, 0);
}

TEST(ThreadGovernor, ContentionDropsToOneThreadForTheHold) {
  Script s;
  EXPECT_EQ(s.run(2.5, 0), 2);
  EXPECT_EQ(s.run(5.0, 12), 2);  // a neighbour: 12 preemptions in 5 ms
  EXPECT_EQ(s.governor.stats().holds, 1);
  // The first hold is 100 ms: runs inside it take one thread, and their (quiet-looking)
  // counts do not end it early.
  const int64_t start = s.now;
  int64_t reduced = 0;
  while (s.now < start + 96 * kMs) reduced += s.run(4.0, 0) == 1 ? 1 : 0;
  EXPECT_EQ(reduced, 24);
  EXPECT_EQ(s.governor.stats().reduced_runs, reduced);
  s.now = start + 101 * kMs;
  EXPECT_EQ(s.run(2.5, 0), 2);  // the probe after the hold
}

TEST(ThreadGovernor, ProbesThatFindContentionDoubleTheHoldUpToTheLimit) {
  ThreadGovernor::Settings settings;
  Script s(2, true, settings);
  std::vector<double> holds_ms;
  for (int probe = 0; probe < 8; ++probe) {
    ASSERT_EQ(s.run(5.0, 12), 2);  // each probe still finds the neighbour
    const int64_t start = s.now;
    while (s.run(1.0, 0) == 1) {
    }
    holds_ms.push_back(static_cast<double>(s.now - start) / kMs);
    s.now -= 1 * kMs;  // that last run was the probe: the next one stands in for it
  }
  // 100, 200, 400, ... ms (+ the run that ended each), then capped at max_hold_ms.
  for (size_t i = 0; i < holds_ms.size(); ++i) {
    const double expected = std::min(settings.first_hold_ms * (1 << i), settings.max_hold_ms);
    EXPECT_NEAR(holds_ms[i], expected, 1.5) << "hold " << i;
  }
}

TEST(ThreadGovernor, AQuietWindowResetsTheHold) {
  Script s;
  ASSERT_EQ(s.run(5.0, 12), 2);  // hold 100 ms, next 200
  s.now += 150 * kMs;
  ASSERT_EQ(s.run(5.0, 12), 2);  // probe finds contention: hold 200 ms, next 400
  s.now += 250 * kMs;
  // The neighbour left: a quiet window (>= 20 ms at full threads) resets the hold.
  for (int i = 0; i < 10; ++i) ASSERT_EQ(s.run(2.5, 0), 2);
  ASSERT_EQ(s.run(5.0, 12), 2);  // a new neighbour: back to the first hold
  const int64_t start = s.now;
  while (s.run(1.0, 0) == 1) {
  }
  EXPECT_NEAR(static_cast<double>(s.now - start) / kMs, 101, 1.5);
}

TEST(ThreadGovernor, PreemptionsSpreadOverShortRunsAddUpInTheWindow) {
  // Two preemptions per 2.5 ms run: no single run reaches min_preemptions (5), the window does.
  Script s;
  EXPECT_EQ(s.run(2.5, 2), 2);
  EXPECT_EQ(s.run(2.5, 2), 2);
  EXPECT_EQ(s.governor.stats().holds, 0);
  EXPECT_EQ(s.run(2.5, 2), 2);
  EXPECT_EQ(s.governor.stats().holds, 1);
  EXPECT_EQ(s.run(2.5, 0), 1);
}

TEST(ThreadGovernor, FixedOrSingleThreadSessionsNeverChange) {
  Script fixed(4, /*adapt=*/false);
  Script single(1, /*adapt=*/true);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(fixed.run(2.5, 20), 4);
    EXPECT_EQ(single.run(2.5, 20), 1);
  }
  EXPECT_EQ(fixed.governor.stats().holds, 0);
  EXPECT_EQ(single.governor.stats().reduced_runs, 0);
}

TEST(ThreadGovernor, ARunThatNeverEndsIsNotJudged) {
  // A run that threw calls begin() only: nothing is judged from it.
  Script s;
  (void)s.governor.begin();
  s.now += 10 * kMs;
  s.preempted += 100;
  (void)s.governor.begin();
  EXPECT_EQ(s.governor.stats().holds, 0);
  EXPECT_EQ(s.run(2.5, 0), 2);
}

}  // namespace
}  // namespace octet
