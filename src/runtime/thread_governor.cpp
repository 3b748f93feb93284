#include "runtime/thread_governor.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>

namespace octet {
namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Every thread of the process, summed by the kernel: a neighbour that takes a core from
// any of the session's threads shows here. One system call (~0.3 us), twice a run.
int64_t process_preemptions() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;  // then nothing is ever judged contended
  return usage.ru_nivcsw;
}

}  // namespace

ThreadGovernor::ThreadGovernor(int threads, bool adapt)
    : ThreadGovernor(threads, adapt, Settings{}, Sources{steady_ns, process_preemptions}) {}

ThreadGovernor::ThreadGovernor(int threads, bool adapt, Settings settings, Sources sources)
    : threads_(std::max(1, threads)),
      adapt_(adapt && threads > 1),
      settings_(settings),
      sources_(std::move(sources)),
      hold_ms_(settings.first_hold_ms) {}

ThreadGovernor::Run ThreadGovernor::begin() {
  runs_.fetch_add(1, std::memory_order_relaxed);
  if (!adapt_) return {threads_, 0, 0};
  const int64_t now = sources_.now_ns();
  if (now < reduced_until_ns_.load(std::memory_order_relaxed)) {
    reduced_runs_.fetch_add(1, std::memory_order_relaxed);
    return {1, now, 0};
  }
  return {threads_, now, sources_.preemptions()};
}

void ThreadGovernor::end(const Run& run) {
  // A run on one thread says nothing: beside a neighbour on the other core it is as
  // undisturbed as on a quiet machine (see the header).
  if (!adapt_ || run.threads != threads_) return;
  const int64_t now = sources_.now_ns();
  judge(now, now - run.start_ns, sources_.preemptions() - run.preemptions);
}

void ThreadGovernor::judge(int64_t now, int64_t elapsed_ns, int64_t preempted) {
  std::lock_guard<std::mutex> lock(mutex_);
  window_ns_ += std::max<int64_t>(elapsed_ns, 0);
  window_preemptions_ += std::max<int64_t>(preempted, 0);
  const double window_s = static_cast<double>(window_ns_) * 1e-9;
  const bool contended = window_preemptions_ >= settings_.min_preemptions &&
                         static_cast<double>(window_preemptions_) >= settings_.preemptions_per_s * window_s;
  if (contended) {
    reduced_until_ns_.store(now + static_cast<int64_t>(hold_ms_ * 1e6), std::memory_order_relaxed);
    holds_.fetch_add(1, std::memory_order_relaxed);
    // The next probe comes later if this one (right after a hold) still finds contention;
    // a quiet window below resets it.
    hold_ms_ = std::min(hold_ms_ * 2, settings_.max_hold_ms);
  } else if (window_s * 1e3 < settings_.window_ms) {
    return;  // too short to call quiet yet
  } else {
    hold_ms_ = settings_.first_hold_ms;
  }
  window_ns_ = 0;
  window_preemptions_ = 0;
}

ThreadGovernor::Stats ThreadGovernor::stats() const {
  return {runs_.load(std::memory_order_relaxed), reduced_runs_.load(std::memory_order_relaxed),
          holds_.load(std::memory_order_relaxed)};
}

}  // namespace octet
