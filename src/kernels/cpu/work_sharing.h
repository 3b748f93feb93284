// Work sharing for short, memory-bound kernels (the MatMulNBits decode GEMV) that cannot
// afford an OpenMP fork/join per call on a busy machine.
//
// Why: an OpenMP parallel region ends in a barrier, so the calling thread waits until every
// team member has woken up and passed through it. On a shared 2-core machine (load 5-10)
// a sleeping worker may not get a core for milliseconds: SmolLM2's int4 decode step measured
// 35 ms with 2 threads against 12 ms with 1, nearly all of it in the 211 GEMVs' joins.
// share_work() never waits for a helper that has not started: the caller and up to
// threads - 1 helper threads claim ranges from one atomic counter (guided: big ranges first,
// single chunks at the end); the caller runs whatever no helper took and waits only for
// ranges already being run by a helper.
// With the helpers busy elsewhere it degrades to the one-thread time, not below it.
//
// Helpers are process-wide threads started on first use; between jobs each spins briefly,
// then polls yielding its core for a while (the jobs of a decode step, and of the next
// step, come every few tens of microseconds), and then sleeps (work_sharing.cpp). One job at
// a time: a call made while another thread's job runs (nested or concurrent sessions) runs
// on its caller alone.
#pragma once

#include <cstdint>

namespace octet::cpu {

using WorkChunkFn = void (*)(void* context, int64_t begin, int64_t end);

// Calls fn(context, begin, end) on disjoint ranges covering [0, count), on the calling
// thread and up to threads - 1 helpers: when shared, ranges of whole multiples of `chunk`
// items (the last one may end at count), at most about count / threads of them; the whole
// of [0, count) in one call when the caller runs it alone. fn must not throw.
void share_work(int threads, int64_t count, int64_t chunk, WorkChunkFn fn, void* context);

template <class Fn>
void share_work(int threads, int64_t count, int64_t chunk, Fn& fn) {
  share_work(threads, count, chunk, [](void* c, int64_t b, int64_t e) { (*static_cast<Fn*>(c))(b, e); }, &fn);
}

}  // namespace octet::cpu
