// The memory planner: places a run's intermediate tensors in one arena by liveness.
//
// A tensor lives from the step that writes it to the last step that reads it (or reads
// a view of it: Reshape-like kernels return their input's memory under a new shape, so
// a view extends the life of the memory it shares). Two tensors whose lives overlap get
// disjoint byte ranges; the others may share. Placement is greedy by size, largest
// first, each at the lowest offset that fits between the already placed tensors it
// overlaps in time, which stays within a few percent of the optimum on sequential
// graphs.
//
// Sizes come from symbolic inference evaluated under the run's input bindings, so a plan
// is made per distinct binding (batch, seq) and cached by the session. Tensors whose size
// is unknown before the run (data-dependent shapes) are left out and use the heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace octet {

// One buffer to place: `bytes` alive from step `first` through step `last` inclusive.
struct Lifetime {
  size_t bytes = 0;
  int first = 0;
  int last = 0;
};

struct ArenaLayout {
  std::vector<size_t> offsets;  // per Lifetime, in input order; multiples of kArenaAlignment
  size_t total_bytes = 0;       // arena size needed
};

constexpr size_t kArenaAlignment = 64;

// Places every lifetime; overlapping lifetimes never share bytes.
ArenaLayout place_lifetimes(const std::vector<Lifetime>& lifetimes);

}  // namespace octet

#include <memory>
#include <mutex>

#include "core/tensor.h"

namespace octet {

// Arenas kept between runs, so a run does not pay for fresh pages (a new large
// allocation is page-faulted in on first touch, which costs as much as small kernels).
// Each concurrent run holds its own arena.
class ArenaPool {
 public:
  // An arena of at least `bytes`, reused when one is free.
  std::shared_ptr<Buffer> acquire(size_t bytes);
  void release(std::shared_ptr<Buffer> arena);

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<Buffer>> free_;
};

}  // namespace octet
