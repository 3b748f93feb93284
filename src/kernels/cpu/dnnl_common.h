// What every oneDNN-backed kernel shares: one CPU engine, execution with a scratchpad of
// the caller's own, and zero-copy views of octet tensors as dnnl::memory.
//
// ISA: oneDNN picks its instruction set once per process (dnnl_set_max_cpu_isa works only
// before its first JIT kernel), so it cannot follow ScopedIsaLevel. The engine caps it at
// the level OCTET_ISA allows (generic -> SSE4.1, avx2 -> AVX2, avx512 -> everything);
// tests cover every level by re-running themselves with OCTET_ISA set.
//
// Threads: oneDNN runs on the OpenMP runtime and sizes its teams from the calling thread's
// omp_get_max_threads(), which Session::run sets. Primitives are created with that count
// in mind, so kernels key their cached primitives on KernelContext::threads() too.
//
// Thread safety: primitives use the user scratchpad mode. In the library mode of the
// Debian build (no DNNL_ENABLE_CONCURRENT_EXEC) the scratchpad is shared and a primitive
// may only run on the thread that created it; here each call brings its own buffer
// (thread-local, grown as needed), so one primitive serves any number of threads.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/dispatch/cpu_features.h"
#include "kernels/kernel.h"

namespace octet::dnnl_cpu {

// The process's CPU engine (created on first use, after capping oneDNN's ISA).
const dnnl::engine& engine();
// The ISA level the engine capped oneDNN at: OCTET_ISA, or what the CPU has.
IsaLevel engine_isa();

// Runs `p` on a fresh stream of engine() with `args` plus a scratchpad of
// `scratchpad_md` from this thread's buffer, and waits for it.
void run_primitive(const dnnl::primitive& p, const dnnl::memory::desc& scratchpad_md,
                   std::unordered_map<int, dnnl::memory>& args);

// A dnnl::memory over existing bytes (no copy). oneDNN never writes inputs, so const
// data is passed through.
dnnl::memory wrap(const dnnl::memory::desc& md, const void* data);

// A plain float32 descriptor: row-major over `dims`, or with explicit `strides`.
dnnl::memory::desc f32_desc(const dnnl::memory::dims& dims, const dnnl::memory::dims& strides = {});

// The implementation a primitive descriptor picked ("brg:avx512_core", "gemm:jit", ...).
std::string impl_name(const dnnl::primitive_desc_base& pd);
// oneDNN's reference implementations are scalar loops slower than octet's own reference
// kernels; a kernel that gets one treats the shape as unsupported.
bool is_reference_impl(const dnnl::primitive_desc_base& pd);

// A oneDNN matmul primitive chosen for one problem shape (its owner caches one per shape).
struct MatMulPrimitive {
  dnnl::matmul primitive;
  dnnl::memory::desc scratchpad;
  bool uses_packed = false;
  bool usable = false;  // false: oneDNN offers only its reference implementation
  std::string impl;     // oneDNN's implementation ("brg:avx512_core", "gemm:jit")
};
// The first of `weights` (each a layout of B and whether it is the node's prepacked copy;
// callers list the packed one first) for which oneDNN has a non-reference implementation
// of make_desc(layout) with `attr`. Combinations oneDNN rejects are skipped; the result
// is unusable when none is left.
MatMulPrimitive first_usable_matmul(const std::vector<std::pair<dnnl::memory::desc, bool>>& weights,
                                    const std::function<dnnl::matmul::desc(const dnnl::memory::desc&)>& make_desc,
                                    const dnnl::primitive_attr& attr);

// Runs the reference kernel of ctx's node: the path for shapes oneDNN does not take. With
// `replacement`, the kernel reads it as input `input` (a weight the state unpacked from
// its packed copy, the graph's copy being released) and the context gets its own back.
void run_reference_kernel(KernelContext& ctx, size_t input = 0, const Tensor* replacement = nullptr);

// A node's primitives by shape key (the operand dims that vary per run, plus the thread
// count), shared by every run with that key. Thread-safe; an entry is created under the
// lock, so two threads never build one twice. Past kMaxShapes keys the cache starts over,
// so a server seeing every sequence length does not grow it (and oneDNN's JIT code)
// without bound; runs holding an entry keep it alive until they finish.
template <typename Entry>
class PrimitiveCache {
 public:
  static constexpr size_t kMaxShapes = 256;

  std::shared_ptr<const Entry> get(std::vector<int64_t> key,
                                   const std::function<std::shared_ptr<const Entry>()>& create) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      if (entries_.size() >= kMaxShapes) entries_.clear();
      it = entries_.emplace(std::move(key), create()).first;
      ++created_;
    }
    return it->second;
  }
  // Calls `fn` on every cached entry (tests and reports).
  void for_each(const std::function<void(const Entry&)>& fn) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [key, entry] : entries_) fn(*entry);
  }
  // Entries created so far, over the cache's whole life.
  int64_t created() const { return created_.load(); }

 private:
  mutable std::mutex mutex_;
  mutable std::map<std::vector<int64_t>, std::shared_ptr<const Entry>> entries_;
  mutable std::atomic<int64_t> created_{0};
};

}  // namespace octet::dnnl_cpu
