// The float32 SIMD kernel families (Softmax, LayerNorm/RMSNorm, GeLU and unary
// activations, broadcasting Add/Sub/Mul/Div) and what they share: the parallel-loop
// policy, the fallback to the reference kernel, and the float32-only prepare check.
//
// Each kernel declines at session creation a node whose inputs are known not to be
// float32 (the session then runs the reference kernel), and at run time hands any case
// it has no fast path for (a dtype the graph did not declare, an odd Scale shape, a bad
// axis) to the reference kernel, which also produces the errors for invalid inputs.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "kernels/kernel.h"

namespace octet::cpu {

void register_cpu_simd_kernels(KernelRegistry& r);
// The families (one file each).
void register_cpu_softmax_norm(KernelRegistry& r);
void register_cpu_activation(KernelRegistry& r);
void register_cpu_binary(KernelRegistry& r);
void register_cpu_cast(KernelRegistry& r);  // Cast to float32 from integers and bool
void register_cpu_reduce(KernelRegistry& r);  // ReduceSum/ReduceMean over contiguous axes, float32
void register_cpu_rotary(KernelRegistry& r);  // octet.ApplyRotary, float32

// Below this many elements a kernel runs on the calling thread: waking an OpenMP team
// costs a few microseconds, as much as the whole op on a [128, 64] activation.
constexpr int64_t kParallelMinElements = 32 * 1024;

// Calls fn(begin, end) on disjoint ranges covering [0, count): one range per thread when
// `work` (elements touched) is big enough, else fn(0, count) here. fn must not throw.
template <class Fn>
void parallel_ranges(const KernelContext& ctx, int64_t count, int64_t work, Fn&& fn) {
  const int64_t threads = work >= kParallelMinElements ? std::min<int64_t>(ctx.threads(), count) : 1;
  if (threads <= 1) {
    if (count > 0) fn(int64_t{0}, count);
    return;
  }
#pragma omp parallel num_threads(static_cast<int>(threads))
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t begin = count * t / nt, end = count * (t + 1) / nt;
    if (begin < end) fn(begin, end);
  }
}

// Attention's task loop, shared by octet.Attention and octet.QAttention: one task per
// (batch b, head h, block of up to `block_rows` query rows [i0, i1)), statically spread
// over the threads; each thread builds its scratch once with make_scratch() and calls
// run(scratch, b, h, i0, i1) for its tasks (a thread's consecutive tasks share a head,
// which lets the kernels keep that head packed).
template <class MakeScratch, class Run>
void parallel_attention_tasks(const KernelContext& ctx, int64_t batch, int64_t heads, int64_t q_len,
                              int64_t block_rows, const MakeScratch& make_scratch, const Run& run) {
  const int64_t blocks = (q_len + block_rows - 1) / block_rows;
  const int64_t tasks = batch * heads * blocks;
  const int threads = static_cast<int>(std::min<int64_t>(ctx.threads(), tasks));
#pragma omp parallel num_threads(threads)
  {
    auto scratch = make_scratch();
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t blk = t % blocks, bh = t / blocks;
      const int64_t i0 = blk * block_rows;
      run(scratch, bh / heads, bh % heads, i0, std::min(q_len, i0 + block_rows));
    }
  }
}

// Runs the node's reference kernel on this context.
void run_reference(KernelContext& ctx);

// KernelDef.prepare for float32-only kernels: declines when any present input of the
// node has a known dtype other than float32.
bool prepare_float32(const Node& node, std::unique_ptr<KernelState>& state);

}  // namespace octet::cpu
