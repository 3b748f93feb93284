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

#include <string>
#include <unordered_map>

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

// Runs the reference kernel of ctx's node: the path for shapes oneDNN does not take. With
// `replacement`, the kernel reads it as input `input` (a weight the state unpacked from
// its packed copy, the graph's copy being released) and the context gets its own back.
void run_reference_kernel(KernelContext& ctx, size_t input = 0, const Tensor* replacement = nullptr);

}  // namespace octet::dnnl_cpu
