#include "runtime/thread_governor.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace octet {
namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The calling thread's schedstat file, open while the thread lives (closed when it exits,
// so a program that runs sessions from short-lived threads keeps no descriptors).
struct SchedstatFile {
  int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  ~SchedstatFile() {
    if (fd >= 0) ::close(fd);
  }
};

// The calling thread's run delay: the second field of /proc/thread-self/schedstat
// ("cpu time, run delay, timeslices", nanoseconds). One pread (~2 us); 0 where the file
// cannot be had.
int64_t thread_waited_ns() {
  thread_local const SchedstatFile file;
  const int fd = file.fd;
  if (fd < 0) return 0;
  char text[96];
  const ssize_t got = ::pread(fd, text, sizeof text - 1, 0);
  if (got <= 0) return 0;
  text[got] = '\0';
  long long on_cpu = 0, waited = 0;
  return std::sscanf(text, "%lld %lld", &on_cpu, &waited) == 2 ? waited : 0;
}

}  // namespace

ThreadGovernor::ThreadGovernor(int threads, bool adapt)
    : ThreadGovernor(threads, adapt, Settings{}, Sources{steady_ns, thread_waited_ns}) {}

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
  return {threads_, now, sources_.waited_ns()};
}

void ThreadGovernor::end(const Run& run) {
  // A run on one thread says nothing: beside a neighbour on the other core it is as
  // undisturbed as on a quiet machine (see the header).
  if (!adapt_ || run.threads != threads_) return;
  const int64_t now = sources_.now_ns();
  judge(now, now - run.start_ns, sources_.waited_ns() - run.waited_ns);
}

void ThreadGovernor::judge(int64_t now, int64_t elapsed_ns, int64_t waited_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  window_ns_ += std::max<int64_t>(elapsed_ns, 0);
  window_waited_ns_ += std::max<int64_t>(waited_ns, 0);
  // A short window says little: one kernel thread's 0.2 ms on the core is 8% of a 2.5 ms run.
  if (static_cast<double>(window_ns_) < settings_.window_ms * 1e6) return;
  const bool contended =
      static_cast<double>(window_waited_ns_) >= settings_.contended_share * static_cast<double>(window_ns_);
  if (contended) {
    reduced_until_ns_.store(now + static_cast<int64_t>(hold_ms_ * 1e6), std::memory_order_relaxed);
    holds_.fetch_add(1, std::memory_order_relaxed);
    // The next probe comes later if this one (right after a hold) still finds contention;
    // a quiet window resets it.
    hold_ms_ = std::min(hold_ms_ * 2, settings_.max_hold_ms);
  } else {
    hold_ms_ = settings_.first_hold_ms;
  }
  window_ns_ = 0;
  window_waited_ns_ = 0;
}

ThreadGovernor::Stats ThreadGovernor::stats() const {
  return {runs_.load(std::memory_order_relaxed), reduced_runs_.load(std::memory_order_relaxed),
          holds_.load(std::memory_order_relaxed)};
}

}  // namespace octet
