// Optimized float32 kernel for octet.GroupedAttention and octet.CachedAttention (semantics:
// src/ops/octet_grouped_attention.cpp; oracle: kernels/ref/ref_grouped_attention.cpp,
// which also owns the input checks and the cached form's cache write).
//
// The hot case is a decode step: one query row per head over a few hundred cached keys,
// where packing K (as octet.Attention's kernel does) would cost as much as the product. So
// each (batch, head, query row) reads its key/value head in place, rows contiguous:
//   s_j = scale * (q . k_j), keep fill and mask applied       (one dot product per key)
//   p = exp(s - max) (vec_ops.h's exp_sum, which also sums)
//   y = (sum_j p_j v_j) / sum(p)                              (one axpy per key)
// The dot product and the axpy are plain loops the compiler vectorizes; the row function
// is compiled three times (generic, AVX2+FMA, AVX-512) and the active ISA level picks one
// (kernels/dispatch/cpu_features.h). At AVX-512 with head size 64 or 128 all the query
// heads of a key/value group run at once instead (grouped_attention_avx512.cpp), their
// units shared with work_sharing.h's helpers; the other rows are spread over OpenMP threads
// only when the step is big enough to pay for waking them (a prefill chunk, a long cache).
#include <algorithm>
#include <cmath>
#include <vector>

#include <omp.h>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/grouped_attention_group.h"
#include "kernels/cpu/simd_kernels.h"
#include "kernels/cpu/thread_scratch.h"
#include "kernels/cpu/vec_ops.h"
#include "kernels/cpu/work_sharing.h"
#include "kernels/dispatch/cpu_features.h"
#include "kernels/ref/ref_grouped_attention.h"

namespace octet {
namespace {

#define OCTET_INLINE inline __attribute__((always_inline))

// Multiply-adds (over all rows, keys and head dims) below which the group rows run on the
// calling thread alone: the threshold the OpenMP split had (SmolLM2 decode: 228 keys).
// Sharing from 57 keys on measured slower in the decode step at load 4 (a helper preempted
// mid-unit keeps the caller waiting), though faster in isolation.
constexpr int64_t kShareMinWork = 256 * 1024;

// One query row: y[0, Dv) for (b, h, i); `s` holds kv_len scores of scratch.
template <int kUnused>
OCTET_INLINE void row_body(const GroupedAttentionCall& c, const cpu::VecTable& vec, int64_t b, int64_t h, int64_t i,
                           float* s, float* y) {
  const int64_t g = c.group_of(h), T = c.kv_len, dk = c.head_k, dv = c.head_v;
  const float* q = c.q + ((b * c.heads + h) * c.q_len + i) * dk;
  const float* k = c.k + b * c.k_b + g * c.k_g;
  const float* v = c.v + b * c.v_b + g * c.v_g;
  for (int64_t j = 0; j < T; ++j) {
    const float* kj = k + j * dk;
    float acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t d = 0; d < dk; ++d) acc += q[d] * kj[d];
    s[j] = acc * c.scale;
  }
  if (c.keep) {
    const uint8_t* keep = c.keep + b * c.k_str[0] + h * c.k_str[1] + i * c.k_str[2];
    for (int64_t j = 0; j < T; ++j)
      if (!keep[j * c.k_str[3]]) s[j] = c.fill;
  }
  if (c.mask) {
    const float* m = c.mask + b * c.m_str[0] + h * c.m_str[1] + i * c.m_str[2];
    if (c.m_str[3] == 1) {
#pragma omp simd
      for (int64_t j = 0; j < T; ++j) s[j] += m[j];
    } else {
      for (int64_t j = 0; j < T; ++j) s[j] += m[j * c.m_str[3]];
    }
  }
  const float mx = vec.max(s, T);
  const float sum = vec.exp_sum(s, 1.0f, mx, s, T);
  std::fill_n(y, dv, 0.0f);
  for (int64_t j = 0; j < T; ++j) {
    const float p = s[j];
    const float* vj = v + j * dv;
#pragma omp simd
    for (int64_t d = 0; d < dv; ++d) y[d] += p * vj[d];
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int64_t d = 0; d < dv; ++d) y[d] *= inv;
}

// Static int8 attention (the op's fake quantization inputs): the row above with Q, K, V
// and the probabilities rounded as the graph's Q/DQ pairs round them (x / scale as a float
// division, ties to even, saturation, NaN to the zero point: ref_quant.cpp's rounding). Each
// key and value row is rounded into scratch first, a loop the compiler vectorizes (vdivps,
// vroundps), then used as in the float row. `qf` and `kv` hold Dk and max(Dk, Dv) floats.
template <int kUnused>
OCTET_INLINE void fake_quant_row(const FakeQuantParams& f, const float* x, float* y, int64_t n) {
  const float scale = f.scale, zero = float(f.zero), lo = float(f.lo), hi = float(f.hi);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float q = std::nearbyint(x[i] / scale);
    const float r = std::min(std::max(q + zero, lo), hi) - zero;
    y[i] = (q != q ? 0.0f : r) * scale;
  }
}

template <int kIsa>
OCTET_INLINE void quantized_row_body(const GroupedAttentionCall& c, const cpu::VecTable& vec, int64_t b, int64_t h,
                                     int64_t i, float* s, float* qf, float* kv, float* y) {
  const int64_t g = c.group_of(h), T = c.kv_len, dk = c.head_k, dv = c.head_v;
  const float* q = c.q + ((b * c.heads + h) * c.q_len + i) * dk;
  const float* k = c.k + b * c.k_b + g * c.k_g;
  const float* v = c.v + b * c.v_b + g * c.v_g;
  fake_quant_row<kIsa>(c.fq_q, q, qf, dk);
  for (int64_t j = 0; j < T; ++j) {
    fake_quant_row<kIsa>(c.fq_k, k + j * dk, kv, dk);
    float acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t d = 0; d < dk; ++d) acc += qf[d] * kv[d];
    s[j] = acc * c.scale;
    if (c.keep && !c.keep[b * c.k_str[0] + h * c.k_str[1] + i * c.k_str[2] + j * c.k_str[3]]) s[j] = c.fill;
    if (c.mask) s[j] += c.mask[b * c.m_str[0] + h * c.m_str[1] + i * c.m_str[2] + j * c.m_str[3]];
  }
  const float mx = vec.max(s, T);
  const float sum = vec.exp_sum(s, 1.0f, mx, s, T);
  const float inv = 1.0f / sum;
  if (!c.row_probabilities)
    for (int64_t j = 0; j < T; ++j) s[j] *= inv;
  fake_quant_row<kIsa>(c.fq_p, s, s, T);
  std::fill_n(y, dv, 0.0f);
  for (int64_t j = 0; j < T; ++j) {
    const float p = s[j];
    if (p == 0) continue;  // a probability rounded to zero adds nothing
    fake_quant_row<kIsa>(c.fq_v, v + j * dv, kv, dv);
#pragma omp simd
    for (int64_t d = 0; d < dv; ++d) y[d] += p * kv[d];
  }
  if (c.row_probabilities)
#pragma omp simd
    for (int64_t d = 0; d < dv; ++d) y[d] *= inv;
}

using QuantizedRowFn = void (*)(const GroupedAttentionCall&, const cpu::VecTable&, int64_t, int64_t, int64_t, float*,
                                float*, float*, float*);

void quantized_row_generic(const GroupedAttentionCall& c, const cpu::VecTable& vec, int64_t b, int64_t h, int64_t i,
                           float* s, float* qf, float* kv, float* y) {
  quantized_row_body<0>(c, vec, b, h, i, s, qf, kv, y);
}
__attribute__((target("avx2,fma"))) void quantized_row_avx2(const GroupedAttentionCall& c, const cpu::VecTable& vec,
                                                             int64_t b, int64_t h, int64_t i, float* s, float* qf,
                                                             float* kv, float* y) {
  quantized_row_body<1>(c, vec, b, h, i, s, qf, kv, y);
}
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void quantized_row_avx512(
    const GroupedAttentionCall& c, const cpu::VecTable& vec, int64_t b, int64_t h, int64_t i, float* s, float* qf,
    float* kv, float* y) {
  quantized_row_body<2>(c, vec, b, h, i, s, qf, kv, y);
}

QuantizedRowFn quantized_row_for(IsaLevel level) {
  switch (level) {
    case IsaLevel::Avx512: return quantized_row_avx512;
    case IsaLevel::Avx2: return quantized_row_avx2;
    default: return quantized_row_generic;
  }
}

using RowFn = void (*)(const GroupedAttentionCall&, const cpu::VecTable&, int64_t, int64_t, int64_t, float*, float*);

void row_generic(const GroupedAttentionCall& c, const cpu::VecTable& vec, int64_t b, int64_t h, int64_t i, float* s,
                 float* y) {
  row_body<0>(c, vec, b, h, i, s, y);
}
__attribute__((target("avx2,fma"))) void row_avx2(const GroupedAttentionCall& c, const cpu::VecTable& vec, int64_t b,
                                                   int64_t h, int64_t i, float* s, float* y) {
  row_body<1>(c, vec, b, h, i, s, y);
}
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void row_avx512(
    const GroupedAttentionCall& c, const cpu::VecTable& vec, int64_t b, int64_t h, int64_t i, float* s, float* y) {
  row_body<2>(c, vec, b, h, i, s, y);
}

RowFn row_for(IsaLevel level) {
  switch (level) {
    case IsaLevel::Avx512: return row_avx512;
    case IsaLevel::Avx2: return row_avx2;
    default: return row_generic;
  }
}

void grouped_attention_f32(KernelContext& ctx) {
  const GroupedAttentionCall c = grouped_attention_call(ctx);
  float* y = ctx.allocate_output_uninitialized(0, DType::Float32, c.out_shape).mutable_data<float>();
  const int64_t rows = c.batch * c.heads * c.q_len;
  if (rows == 0 || c.head_v == 0) return;
  const cpu::VecTable& vec = cpu::vec_ops();
  const int64_t per_group = c.groups > 0 && c.heads % c.groups == 0 ? c.heads / c.groups : 0;
  const cpu::GroupRowsFn group_rows =
      !c.quantized && active_isa() >= IsaLevel::Avx512 && c.head_k == c.head_v && per_group
          ? cpu::group_rows_avx512(c.head_k, per_group)
          : nullptr;
  if (group_rows) {  // every query head of a group at once (grouped_attention_group.h)
    // A decode step has one unit per key/value group (SmolLM2: 3) of a few microseconds
    // each: share_work (work_sharing.h) hands them to a helper thread that is still
    // spinning from the step's GEMVs, where an OpenMP fork/join would wait for a sleeping
    // thread on a busy machine. Scores come from per-thread scratch (no allocation).
    const int64_t units = c.batch * c.groups * c.q_len;
    const int threads = rows * c.kv_len * (c.head_k + c.head_v) >= kShareMinWork ? ctx.threads() : 1;
    const int64_t chunk = std::max<int64_t>(1, units / (4 * std::max(threads, 1)));
    auto run = [&](int64_t u0, int64_t u1) {
      float* scores = cpu::thread_scratch_as<float>(cpu::Scratch::GroupedAttentionScores,
                                                    per_group * std::max<int64_t>(c.kv_len, 1));
      for (int64_t u = u0; u < u1; ++u) {  // u runs over (b, g, i)
        const int64_t i = u % c.q_len, g = (u / c.q_len) % c.groups, b = u / (c.q_len * c.groups);
        group_rows(c, vec, b, g, i, scores, y + (b * c.q_len + i) * c.heads * c.head_v + g * per_group * c.head_v);
      }
    };
    cpu::share_work(threads, units, chunk, run);
    return;
  }
  const RowFn row = row_for(active_isa());
  const QuantizedRowFn quantized_row = quantized_row_for(active_isa());
  const int64_t work = rows * c.kv_len * (c.head_k + c.head_v);
  cpu::parallel_ranges(ctx, rows, work / 8, [&](int64_t r0, int64_t r1) {
    const int64_t t = std::max<int64_t>(c.kv_len, 1);
    std::vector<float> s(static_cast<size_t>(t + c.head_k + std::max(c.head_k, c.head_v)));
    for (int64_t r = r0; r < r1; ++r) {
      // r runs over (b, h, i) in Q's order; Y is [B, S, H*Dv].
      const int64_t i = r % c.q_len, h = (r / c.q_len) % c.heads, b = r / (c.q_len * c.heads);
      float* yr = y + (b * c.q_len + i) * c.heads * c.head_v + h * c.head_v;
      if (c.quantized) quantized_row(c, vec, b, h, i, s.data(), s.data() + t, s.data() + t + c.head_k, yr);
      else row(c, vec, b, h, i, s.data(), yr);
    }
  });
}

// Float32 Q, K and V (the other inputs are int64 / bool by definition).
bool prepare(const Node& node, std::unique_ptr<KernelState>&) {
  for (size_t i : {size_t{0}, size_t{1}, size_t{2}})
    if (!node.input(i) || (node.input(i)->type.known() && node.input(i)->type.dtype != DType::Float32)) return false;
  return true;
}

}  // namespace

void register_cpu_grouped_attention(KernelRegistry& r) {
  r.add("octet", "GroupedAttention", KernelDef{grouped_attention_f32, prepare});
  r.add("octet", "CachedAttention", KernelDef{grouped_attention_f32, prepare});
}

}  // namespace octet
