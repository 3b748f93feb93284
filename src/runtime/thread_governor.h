// How many threads a session's next run uses: all it was given while the process has the
// cores to itself, one while other processes compete for them (issues 19 and 20).
//
// Why: OpenMP threads that wait between parallel regions either spin or sleep. Sleeping
// costs a wake-up per region (~45 us on a 2-vCPU VM; bench/omp_regions): MiniLM-L6 int8
// ran 8-12% slower with GOMP_SPINCOUNT 1000 than with 10000 on a quiet machine. Spinning
// is ruinous beside a neighbour: each extra 1000 spins cost a MiniLM-L3 run ~0.9 ms (8%)
// beside a busy loop, a second octet or a quantize (bench/shared_cpu.py). No spin length
// is right for both. One thread needs no waits at all, and beside a neighbour that holds
// one of two cores it was faster than two (MiniLM-L3 fp32: 10.0 vs 11.4-12 ms).
//
// The signal: involuntary context switches of this process (getrusage), counted over
// runs at full threads. Quiet, a process sees ~30 a second (kernel threads, timers);
// with a neighbour contending, two threads saw ~2350 a second. At one thread beside a
// neighbour on the other core the count is quiet again, so it cannot say when the
// neighbour leaves: after a hold the governor probes with all threads, and each probe
// that still finds contention doubles the hold (up to max_hold_ms).
//
// Outputs do not depend on it: every kernel splits work so that one thread or several
// compute the same values (tests/unit/runtime_thread_governor_test.cpp checks a model's
// outputs bit for bit across a forced change).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>

namespace octet {

class ThreadGovernor {
 public:
  struct Settings {
    double window_ms = 20;          // a window of full-thread runs judged quiet once this long
    int64_t min_preemptions = 5;    // ...contended when it holds at least this many
    double preemptions_per_s = 200; // ...and at least this rate (long runs see some anyway)
    double first_hold_ms = 100;     // one thread for this long after contention is seen
    double max_hold_ms = 3200;      // the longest hold (probes that find contention double it)
  };
  // Where time and the preemption count come from (tests inject their own).
  struct Sources {
    std::function<int64_t()> now_ns;       // a monotonic clock
    std::function<int64_t()> preemptions;  // the process's involuntary context switches so far
  };
  struct Stats {
    int64_t runs = 0;          // runs begun
    int64_t reduced_runs = 0;  // of which ran on one thread
    int64_t holds = 0;         // times contention was seen
  };
  // `threads`: what the session was given; `adapt` false keeps it always.
  ThreadGovernor(int threads, bool adapt);
  ThreadGovernor(int threads, bool adapt, Settings settings, Sources sources);

  // One run: begin() says its threads; end() after a run that completed feeds the
  // judgement (a run that threw is simply not counted). Thread-safe.
  struct Run {
    int threads;
    int64_t start_ns;
    int64_t preemptions;
  };
  Run begin();
  void end(const Run& run);

  int threads() const { return threads_; }
  Stats stats() const;

 private:
  void judge(int64_t now, int64_t elapsed_ns, int64_t preempted);

  const int threads_;
  const bool adapt_;
  const Settings settings_;
  const Sources sources_;
  std::atomic<int64_t> reduced_until_ns_{0};
  std::atomic<int64_t> runs_{0}, reduced_runs_{0}, holds_{0};
  std::mutex mutex_;  // the window and the hold (end() only)
  int64_t window_ns_ = 0, window_preemptions_ = 0;
  double hold_ms_;
};

}  // namespace octet
