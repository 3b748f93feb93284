// share_work (work_sharing.h): one job at a time, published through one atomic word.
//
// state_ holds (generation << 32 | next chunk). A helper claims chunk i of generation g by
// a compare-and-swap from (g, i) to (g, i + 1); the job's fields are read between its
// load of state_ and that CAS. The caller writes the fields of job g + 1 only after job
// g's chunks were all claimed (which changed state_) and run, so a CAS that succeeds proves
// the fields it read were job g's; a helper that read a newer job's fields fails its CAS.
#include "kernels/cpu/work_sharing.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace octet::cpu {
namespace {

constexpr int kMaxHelpers = 63;
// How long an idle helper spins before it sleeps: a decode step's GEMVs come every
// 10-50 us, and a sleeping helper costs its caller a wake-up system call.
// Measured on SmolLM2's int4 decode step under load 5-6 (2 threads): 0, 20 and 50 us
// within noise of each other, 200 us and more slower (the spinning helper takes the core
// its caller needs).
constexpr auto kSpin = std::chrono::microseconds(20);

class WorkPool {
 public:
  void run(int threads, int64_t count, int64_t chunk, WorkChunkFn fn, void* context) {
    const int64_t chunks = (count + chunk - 1) / chunk;
    std::unique_lock<std::mutex> job_lock(job_mutex_, std::try_to_lock);
    if (threads <= 1 || chunks <= 1 || !job_lock.owns_lock()) return fn(context, 0, count);
    start_helpers(std::min(threads - 1, kMaxHelpers));
    fn_.store(fn, std::memory_order_relaxed);
    context_.store(context, std::memory_order_relaxed);
    count_.store(count, std::memory_order_relaxed);
    chunk_.store(chunk, std::memory_order_relaxed);
    chunks_.store(chunks, std::memory_order_relaxed);
    wanted_.store(threads - 1, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    const uint64_t generation = (state_.load(std::memory_order_relaxed) >> 32) + 1;
    state_.store(generation << 32, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      wake_.notify_all();
    }
    const int64_t mine = work(generation);
    while (done_.load(std::memory_order_acquire) + mine < chunks) _mm_pause();
  }

 private:
  // Claims and runs chunks of `generation` until none is left; returns how many it ran.
  int64_t work(uint64_t generation) {
    int64_t ran = 0;
    for (;;) {
      uint64_t s = state_.load(std::memory_order_acquire);
      if (s >> 32 != generation) return ran;
      const int64_t i = static_cast<int64_t>(s & 0xffffffffu);
      const int64_t chunks = chunks_.load(std::memory_order_relaxed);
      const int64_t count = count_.load(std::memory_order_relaxed), chunk = chunk_.load(std::memory_order_relaxed);
      const WorkChunkFn fn = fn_.load(std::memory_order_relaxed);
      void* context = context_.load(std::memory_order_relaxed);
      if (i >= chunks) return ran;
      if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) continue;
      fn(context, i * chunk, std::min(count, (i + 1) * chunk));
      ++ran;
    }
  }

  void helper(int index) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t generation = state_.load(std::memory_order_acquire) >> 32;
      if (generation == seen) {
        const auto until = std::chrono::steady_clock::now() + kSpin;
        for (int spins = 0; generation == seen; ++spins) {
          _mm_pause();
          generation = state_.load(std::memory_order_acquire) >> 32;
          if (generation == seen && spins % 64 == 63 && std::chrono::steady_clock::now() > until) {
            std::unique_lock<std::mutex> lock(sleep_mutex_);
            sleepers_.fetch_add(1, std::memory_order_seq_cst);
            wake_.wait(lock, [&] { return state_.load(std::memory_order_seq_cst) >> 32 != seen; });
            sleepers_.fetch_sub(1, std::memory_order_relaxed);
            generation = state_.load(std::memory_order_acquire) >> 32;
          }
        }
      }
      seen = generation;
      // Helpers beyond the job's thread count sit it out (a session with fewer threads).
      if (index < wanted_.load(std::memory_order_relaxed)) {
        const int64_t ran = work(generation);
        if (ran) done_.fetch_add(ran, std::memory_order_acq_rel);
      }
    }
  }

  void start_helpers(int wanted) {
    while (static_cast<int>(helpers_.size()) < wanted) {
      const int index = static_cast<int>(helpers_.size());
      helpers_.emplace_back([this, index] { helper(index); });
      helpers_.back().detach();
    }
  }

  std::mutex job_mutex_;  // one job at a time; held by the caller while it runs
  std::vector<std::thread> helpers_;
  std::atomic<uint64_t> state_{0};
  std::atomic<WorkChunkFn> fn_{nullptr};
  std::atomic<void*> context_{nullptr};
  std::atomic<int64_t> count_{0}, chunk_{1}, chunks_{0}, done_{0};
  std::atomic<int> wanted_{0}, sleepers_{0};
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
};

WorkPool& pool() {
  static WorkPool* p = new WorkPool;  // never destroyed: its detached helpers outlive main()
  return *p;
}

}  // namespace

void share_work(int threads, int64_t count, int64_t chunk, WorkChunkFn fn, void* context) {
  if (count <= 0) return;
  pool().run(threads, count, std::max<int64_t>(chunk, 1), fn, context);
}

}  // namespace octet::cpu
