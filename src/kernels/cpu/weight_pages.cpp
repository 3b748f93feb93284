#include "kernels/cpu/weight_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>

namespace octet::cpu {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kRegion = size_t{32} << 20;  // what small requests share
constexpr size_t kOwnRegion = kRegion / 4;    // requests this big get a region of their own

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// An anonymous mapping of `size` bytes (a multiple of 4 KiB; of kHugePage where regions
// are shared) starting on a 2 MiB boundary: mapped 2 MiB larger, the unaligned head and
// tail given back.
class Region {
 public:
  explicit Region(size_t size) : size_(size) {
    const size_t mapped = size + kHugePage;
    void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<uintptr_t>(p), aligned = round_up(start, kHugePage);
    if (aligned > start) munmap(p, aligned - start);
    const uintptr_t end = aligned + size, mapped_end = start + mapped;
    if (mapped_end > end) munmap(reinterpret_cast<void*>(end), mapped_end - end);
    base_ = reinterpret_cast<uint8_t*>(aligned);
    // Advice only: without transparent huge pages (or with them off) the mapping stays in
    // 4 KiB pages and everything works the same, only slower.
    madvise(base_, size_, MADV_HUGEPAGE);
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  ~Region() { munmap(base_, size_); }
  uint8_t* base() const { return base_; }
  size_t size() const { return size_; }

 private:
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

std::shared_ptr<Buffer> weight_pages(size_t bytes) {
  const size_t need = round_up(std::max<size_t>(bytes, 64), 64);
  if (need >= kOwnRegion) {
    auto region = std::make_shared<Region>(round_up(need, kHugePage));
    return Buffer::borrow_writable(region->base(), bytes, region);
  }
  static std::mutex mutex;
  static std::shared_ptr<Region> current;
  static size_t used = 0;
  std::lock_guard<std::mutex> lock(mutex);
  if (!current || used + need > current->size()) current = std::make_shared<Region>(kRegion), used = 0;
  uint8_t* p = current->base() + used;
  used += need;
  return Buffer::borrow_writable(p, bytes, current);
}

std::shared_ptr<Buffer> weight_pages_exact(size_t bytes) {
  auto region = std::make_shared<Region>(round_up(std::max<size_t>(bytes, 64), 4096));
  return Buffer::borrow_writable(region->base(), bytes, region);
}

}  // namespace octet::cpu
