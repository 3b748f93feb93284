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
// The signal: the time the calling thread spent runnable but waiting for a core (the
// kernel's run delay, /proc/thread-self/schedstat), over windows of full-thread runs.
// Measured on MiniLM-L3 and a SmolLM2 decode loop at 2 threads: quiet, 0-0.8% of the
// wall time; beside a busy loop, 15-38%. (Involuntary context switches, tried first, do
// not separate them once OpenMP threads spin instead of sleeping: ~190/s quiet against
// ~310/s beside the loop.) At one thread beside a neighbour on the other core the wait is
// quiet again, so it cannot say when the neighbour leaves: after a hold the governor
// probes with all threads, and each probe that still finds contention doubles the hold
// (up to max_hold_ms). Where the kernel gives no schedstat the wait reads 0: never
// contended, all threads always.
//
// Outputs do not depend on it: the kernels split work so that one thread or several
// compute the same values (tests/python/test_bench_cli.py checks fp32 and static int8
// BERT bit for bit at 1 and 2 threads); the decisions are tested in
// tests/unit/runtime_thread_governor_test.cpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>

namespace octet {

class ThreadGovernor {
 public:
  struct Settings {
    double window_ms = 20;          // full-thread runs are judged once they add up to this
    double contended_share = 0.10;  // ...contended when the thread waited this share of it
    double first_hold_ms = 100;     // one thread for this long after contention is seen
    double max_hold_ms = 3200;      // the longest hold (probes that find contention double it)
  };
  // Where time and the run delay come from (tests inject their own).
  struct Sources {
    std::function<int64_t()> now_ns;       // a monotonic clock
    std::function<int64_t()> waited_ns;  // the calling thread's run delay so far
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
    int64_t waited_ns;
  };
  Run begin();
  void end(const Run& run);

  Stats stats() const;

 private:
  void judge(int64_t now, int64_t elapsed_ns, int64_t waited_ns);

  const int threads_;
  const bool adapt_;
  const Settings settings_;
  const Sources sources_;
  std::atomic<int64_t> reduced_until_ns_{0};
  std::atomic<int64_t> runs_{0}, reduced_runs_{0}, holds_{0};
  std::mutex mutex_;  // the window and the hold (end() only)
  int64_t window_ns_ = 0, window_waited_ns_ = 0;
  double hold_ms_;
};

}  // namespace octet
