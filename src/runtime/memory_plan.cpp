#include "runtime/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace octet {
namespace {

size_t align_up(size_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

bool overlap_in_time(const Lifetime& a, const Lifetime& b) { return a.first <= b.last && b.first <= a.last; }

}  // namespace

ArenaLayout place_lifetimes(const std::vector<Lifetime>& lifetimes) {
  ArenaLayout layout;
  layout.offsets.assign(lifetimes.size(), 0);
  std::vector<size_t> order(lifetimes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Largest first; ties by earlier start so the result does not depend on sort internals.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (lifetimes[a].bytes != lifetimes[b].bytes) return lifetimes[a].bytes > lifetimes[b].bytes;
    return lifetimes[a].first < lifetimes[b].first;
  });

  struct Placed {
    size_t offset, end;
  };
  std::vector<size_t> placed;  // indices into lifetimes, already given offsets
  std::vector<Placed> busy;
  for (size_t i : order) {
    const Lifetime& t = lifetimes[i];
    size_t size = align_up(std::max<size_t>(t.bytes, 1));
    // The byte ranges of placed tensors alive at the same time, by offset.
    busy.clear();
    for (size_t j : placed)
      if (overlap_in_time(t, lifetimes[j]))
        busy.push_back({layout.offsets[j], layout.offsets[j] + align_up(std::max<size_t>(lifetimes[j].bytes, 1))});
    std::sort(busy.begin(), busy.end(), [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
    // The first gap that fits: smallest offset, so the arena stays compact.
    size_t offset = 0;
    for (const Placed& b : busy) {
      if (b.offset >= offset + size) break;
      offset = std::max(offset, b.end);
    }
    layout.offsets[i] = offset;
    layout.total_bytes = std::max(layout.total_bytes, offset + size);
    placed.push_back(i);
  }
  return layout;
}

}  // namespace octet

namespace octet {

std::shared_ptr<Buffer> ArenaPool::acquire(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < free_.size(); ++i)
      if (free_[i]->size() >= bytes) {
        auto arena = std::move(free_[i]);
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
        return arena;
      }
    // None is large enough: drop one too-small arena, so the pool does not keep growing
    // as shapes grow; the new, larger one takes its place when released.
    if (!free_.empty()) free_.pop_back();
  }
  return Buffer::allocate_uninitialized(std::max<size_t>(bytes, kArenaAlignment));
}

void ArenaPool::release(std::shared_ptr<Buffer> arena) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(std::move(arena));
}

}  // namespace octet
