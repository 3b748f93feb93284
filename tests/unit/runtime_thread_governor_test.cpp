// ThreadGovernor's decisions on a scripted clock and run delay: quiet runs keep all
// threads; a window in which the session's thread waited for a core a neighbour's share
// of the time drops to one thread for the hold; the probe after it doubles the hold while
// contention lasts and a quiet window resets it. (The real shares on the 2-vCPU VM are in
// runtime/thread_governor.h: 0-0.8% quiet, 15-38% beside a busy loop.)
#include <gtest/gtest.h>

#include <vector>

#include "runtime/thread_governor.h"

namespace octet {
namespace {

constexpr int64_t kMs = 1000000;

// A scripted thread: run() advances the clock by the run's length and the run delay by
// what the run waited for a core, as a session run would see them.
struct Script {
  int64_t now = 0;
  int64_t waited = 0;
  ThreadGovernor governor;

  explicit Script(int threads = 2, bool adapt = true)
      : governor(threads, adapt, ThreadGovernor::Settings{}, {[this] { return now; }, [this] { return waited; }}) {}

  // One run of `ms` milliseconds of which it waited `waited_ms`; returns its threads.
  int run(double ms, double waited_ms) {
    const ThreadGovernor::Run r = governor.begin();
    now += static_cast<int64_t>(ms * kMs);
    waited += static_cast<int64_t>(waited_ms * kMs);
    governor.end(r);
    return r.threads;
  }
  // Runs of `ms` on one thread until one gets all threads again; how long that took
  // (the hold, plus the probe run itself).
  double hold_then_probe(double ms) {
    const int64_t start = now;
    while (run(ms, 0) == 1) {
    }
    return static_cast<double>(now - start) / kMs;
  }
};

TEST(ThreadGovernor, QuietRunsKeepAllThreads) {
  Script s;
  // 0.8% waiting, as the busiest quiet encoder saw; an occasional 0.2 ms preemption.
  for (int i = 0; i < 4000; ++i) EXPECT_EQ(s.run(2.5, i % 50 == 0 ? 0.2 : 0.01), 2) << "run " << i;
  EXPECT_EQ(s.governor.stats().reduced_runs, 0);
  EXPECT_EQ(s.governor.stats().holds, 0);
  EXPECT_EQ(s.governor.stats().runs, 4000);
}

TEST(ThreadGovernor, OneShortRunsWaitIsNotJudgedAlone) {
  // A 0.6 ms wait in a 2.5 ms run is 24%, but the window (20 ms) is what is judged.
  Script s;
  EXPECT_EQ(s.run(2.5, 0.6), 2);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.run(2.5, 0), 2);
  EXPECT_EQ(s.governor.stats().holds, 0);
}

TEST(ThreadGovernor, ContentionDropsToOneThreadForTheHold) {
  Script s;
  for (int i = 0; i < 8; ++i) ASSERT_EQ(s.run(2.5, 0), 2);  // a quiet window
  EXPECT_EQ(s.run(19.0, 6.0), 2);  // a neighbour: waited 6 of 19 ms, window 20+ ms
  EXPECT_EQ(s.run(2.5, 0.8), 2);
  EXPECT_EQ(s.governor.stats().holds, 1);
  // The first hold is 100 ms: runs inside it take one thread, and their quiet-looking
  // waits do not end it early.
  const int64_t start = s.now;
  int64_t reduced = 0;
  while (s.now < start + 96 * kMs) reduced += s.run(4.0, 0) == 1 ? 1 : 0;
  EXPECT_EQ(reduced, 24);
  EXPECT_EQ(s.governor.stats().reduced_runs, reduced);
  s.now = start + 101 * kMs;
  EXPECT_EQ(s.run(2.5, 0), 2);  // the probe after the hold
}

TEST(ThreadGovernor, ProbesThatFindContentionDoubleTheHoldUpToTheLimit) {
  const ThreadGovernor::Settings settings;
  Script s;
  std::vector<double> holds_ms;
  ASSERT_EQ(s.run(20.0, 5.0), 2);
  for (int probe = 0; probe < 8; ++probe) {
    holds_ms.push_back(s.hold_then_probe(1.0));  // its 1 ms probe found the neighbour too:
    ASSERT_EQ(s.run(19.0, 5.0), 2);              // together with this one, a contended window
  }
  // 100, 200, 400, ... ms (+ the 1 ms probe), then capped at max_hold_ms.
  for (size_t i = 0; i < holds_ms.size(); ++i) {
    const double expected = std::min(settings.first_hold_ms * (1 << i), settings.max_hold_ms) + 1;
    EXPECT_NEAR(holds_ms[i], expected, 1.01) << "hold " << i;
  }
}

TEST(ThreadGovernor, AQuietWindowResetsTheHold) {
  Script s;
  ASSERT_EQ(s.run(20.0, 6.0), 2);  // hold 100 ms, next 200
  s.now += 150 * kMs;
  ASSERT_EQ(s.run(20.0, 6.0), 2);  // the probe finds contention: hold 200 ms, next 400
  s.now += 250 * kMs;
  // The neighbour left: a quiet window (>= 20 ms at full threads) resets the hold.
  for (int i = 0; i < 10; ++i) ASSERT_EQ(s.run(2.5, 0), 2);
  ASSERT_EQ(s.run(20.0, 6.0), 2);  // a new neighbour: back to the first hold
  EXPECT_NEAR(s.hold_then_probe(1.0), 101, 1.01);
}

TEST(ThreadGovernor, WaitSpreadOverShortRunsAddsUpInTheWindow) {
  // 12% waiting in every 2.5 ms run: judged once eight runs make a 20 ms window.
  Script s;
  for (int i = 0; i < 7; ++i) EXPECT_EQ(s.run(2.5, 0.3), 2);
  EXPECT_EQ(s.governor.stats().holds, 0);
  EXPECT_EQ(s.run(2.5, 0.3), 2);
  EXPECT_EQ(s.governor.stats().holds, 1);
  EXPECT_EQ(s.run(2.5, 0), 1);
}

TEST(ThreadGovernor, FixedOrSingleThreadSessionsNeverChange) {
  Script fixed(4, /*adapt=*/false);
  Script single(1, /*adapt=*/true);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(fixed.run(2.5, 2.0), 4);
    EXPECT_EQ(single.run(2.5, 2.0), 1);
  }
  EXPECT_EQ(fixed.governor.stats().holds, 0);
  EXPECT_EQ(single.governor.stats().reduced_runs, 0);
}

TEST(ThreadGovernor, ARunThatNeverEndsIsNotJudged) {
  // A run that threw calls begin() only: nothing is judged from it.
  Script s;
  (void)s.governor.begin();
  s.now += 30 * kMs;
  s.waited += 25 * kMs;
  EXPECT_EQ(s.governor.stats().holds, 0);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(s.run(2.5, 0), 2);
  EXPECT_EQ(s.governor.stats().holds, 0);
}

}  // namespace
}  // namespace octet
