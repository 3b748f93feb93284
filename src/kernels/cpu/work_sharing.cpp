// share_work (work_sharing.h): one job at a time, published through one atomic word.
//
// state_ holds (generation << 32 | next unit), a unit being `chunk` items. A thread claims
// units [i, i + c) of generation g by a compare-and-swap from (g, i) to (g, i + c); the
// job's fields are read between its load of state_ and that CAS. Before the caller writes
// the fields of job g + 1 it moves state_ to (g + 1, kSettingUp), a value no claim starts
// from, and publishes (g + 1, 0) after them; so a CAS that succeeds proves the fields it
// read were job g's: a helper that read some of job g + 1's fields fails its CAS. (Without
// that step a helper could load job g's final state (g, units_g), read job g + 1's larger
// unit count, and claim from (g, units_g) before the publication: it ran units of job g + 1
// that job g + 1 ran again, and its count let the caller return while it still wrote into
// the caller's memory; tests/unit/cpu_work_sharing_test.cpp saw items run twice in ~0.3% of
// back-to-back jobs.)
//
// Claims are guided: c = ceil(remaining units / threads). Why not one unit per claim: each
// claim is a CAS on a cache line the other core also reads (a transfer between cores, far
// slower in a VM whose two vCPUs may sit on different CCDs), and each claim starts a new
// weight stream whose first lines the prefetchers have not fetched. A 0.5 MB decode GEMV
// in 32 KB units was 15 claims of ~1 us each; guided it is a few long contiguous streams,
// the first claim half of the job, and the tail still comes in single units, so neither
// thread waits long on the other's last claim.
#include "kernels/cpu/work_sharing.h"

#include <immintrin.h>
#include <sched.h>

#include <cstdlib>

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
constexpr int64_t kMaxUnits = int64_t{1} << 31;  // a job's units, in state_'s low 32 bits with room for a claim
// state_'s low word while the caller writes a job's fields: above any unit index, so no
// claim starts from it, and helpers wait for the generation's publication.
constexpr uint64_t kSettingUp = 0xffffffffu;

// The newest generation whose fields are complete.
uint64_t published_generation(uint64_t state) {
  return (state & 0xffffffffu) == kSettingUp ? (state >> 32) - 1 : state >> 32;
}
// How long an idle helper spins before it sleeps: a decode step's GEMVs come every
// 10-50 us, and a sleeping helper costs its caller a wake-up system call.
// Measured on SmolLM2's int4 decode step under load 5-6 (2 threads): 0, 20 and 50 us
// within noise of each other, 200 us and more slower (the spinning helper takes the core
// its caller needs).
constexpr auto kSpin = std::chrono::microseconds(20);
// After kSpin an idle helper keeps polling, but yields its core between polls (sched_yield:
// any other runnable thread there runs first), until kPoliteSpin has passed; only then it
// sleeps. Why: a decode step's other ops (attention, norms) leave gaps of 20-50 us between
// the GEMVs, and the sampling between steps a few more; a helper asleep there is woken by
// a system call and an inter-processor interrupt, which in a VM arrives tens of us later,
// after its caller ran most of a 10-20 us GEMV alone (sharing every GEMV gained nothing).
// Yielding rather than pausing keeps the caller's own core, and other processes on a busy
// machine, from waiting on a poller. OCTET_SHARE_SPIN_US overrides it (read once).
constexpr int64_t kPoliteSpinUs = 2000;

std::chrono::microseconds polite_spin() {
  static const std::chrono::microseconds us = [] {
    const char* env = std::getenv("OCTET_SHARE_SPIN_US");
    if (!env || !*env) return std::chrono::microseconds(kPoliteSpinUs);
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    return std::chrono::microseconds(*end == '\0' && v >= 0 ? v : kPoliteSpinUs);
  }();
  return us;
}

class WorkPool {
 public:
  void run(int threads, int64_t count, int64_t chunk, WorkChunkFn fn, void* context) {
    chunk = std::max(chunk, (count + kMaxUnits - 1) / kMaxUnits);  // units fit state_'s low word
    const int64_t chunks = (count + chunk - 1) / chunk;
    std::unique_lock<std::mutex> job_lock(job_mutex_, std::try_to_lock);
    if (threads <= 1 || chunks <= 1 || !job_lock.owns_lock()) return fn(context, 0, count);
    threads = std::min(threads, kMaxHelpers + 1);
    start_helpers(threads - 1);
    // Closed to claims before any field changes (see the top of the file). The fields are
    // written with release and read with acquire: a helper that sees a new field then also
    // sees this state in its CAS.
    const uint64_t generation = (state_.load(std::memory_order_relaxed) >> 32) + 1;
    state_.exchange(generation << 32 | kSettingUp, std::memory_order_acq_rel);
    fn_.store(fn, std::memory_order_release);
    context_.store(context, std::memory_order_release);
    count_.store(count, std::memory_order_release);
    chunk_.store(chunk, std::memory_order_release);
    chunks_.store(chunks, std::memory_order_release);
    wanted_.store(threads - 1, std::memory_order_release);
    done_.store(0, std::memory_order_relaxed);
    state_.store(generation << 32, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      wake_.notify_all();
    }
    const int64_t mine = work(generation);
    while (done_.load(std::memory_order_acquire) + mine < chunks) _mm_pause();
  }

 private:
  // Claims and runs units of `generation` until none is left; returns how many it ran.
  int64_t work(uint64_t generation) {
    int64_t ran = 0;
    for (;;) {
      uint64_t s = state_.load(std::memory_order_acquire);
      if (s >> 32 != generation) return ran;
      const int64_t i = static_cast<int64_t>(s & 0xffffffffu);
      const int64_t chunks = chunks_.load(std::memory_order_acquire);
      const int64_t threads = wanted_.load(std::memory_order_acquire) + 1;
      const int64_t count = count_.load(std::memory_order_acquire), chunk = chunk_.load(std::memory_order_acquire);
      const WorkChunkFn fn = fn_.load(std::memory_order_acquire);
      void* context = context_.load(std::memory_order_acquire);
      if (i >= chunks) return ran;
      const int64_t claim = (chunks - i + threads - 1) / threads;  // guided: see the top of the file
      if (!state_.compare_exchange_weak(s, s + static_cast<uint64_t>(claim), std::memory_order_acq_rel)) continue;
      fn(context, i * chunk, std::min(count, (i + claim) * chunk));
      ran += claim;
    }
  }

  void helper(int index) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t generation = published_generation(state_.load(std::memory_order_acquire));
      if (generation == seen) {
        const auto idle = std::chrono::steady_clock::now();
        const auto polite = idle + kSpin, sleep = idle + polite_spin();
        for (int spins = 0; generation == seen; ++spins) {
          if (spins % 64 != 63) {
            _mm_pause();
          } else {
            const auto now = std::chrono::steady_clock::now();
            if (now > sleep) {
              std::unique_lock<std::mutex> lock(sleep_mutex_);
              sleepers_.fetch_add(1, std::memory_order_seq_cst);
              wake_.wait(lock, [&] { return published_generation(state_.load(std::memory_order_seq_cst)) != seen; });
              sleepers_.fetch_sub(1, std::memory_order_relaxed);
            } else if (now > polite) {
              sched_yield();
            }
          }
          generation = published_generation(state_.load(std::memory_order_acquire));
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
