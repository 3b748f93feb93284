// Optimized float32 kernel for octet.Attention (semantics: src/ops/octet_attention.cpp;
// oracle: kernels/ref/ref_attention.cpp).
//
// Work is split into tasks of (batch, head, block of up to 64 query rows), run in parallel
// with OpenMP on ctx.threads() threads. A task packs its head's K transposed (in blocks
// of 16 keys, [Sk/16][Dk][16], keys padded to 16) and V ([Sk][Dv], padded to 16) into
// per-thread scratch, so the inner loops read contiguous memory whatever the layout
// (batch- or seq-first), then for a tile of query rows at a time (8 under AVX-512, 4
// otherwise; a block's leftover rows take a tile of 1, 2 or 4), its queries transposed:
//   scores  acc[r] += q[r][d] * Kt[d][j..j+T]  (rows x T register tile, T = 32 columns
//           under AVX-512, 16 otherwise; one pass over Dk; K^T packed in blocks of 16
//           keys, each block's Dk x 16 values contiguous)
//   s = scale * acc + mask, causal entries = lowest; e = exp(s - row max) (vec_ops.h),
//     the max kept in registers while storing when there is no mask or causal fill
//   out     acc[r] += e[r][j] * V[j][d..d+T]   (rows x T register tile; one pass over Sk),
//     stored times 1 / sum(e[r]): softmax's normalization costs one multiply per output
// Only a [64, Sk] score block per thread exists at a time, never [B, H, Sq, Sk].
//
// The tiles use GCC vector types, which the compiler lowers to the function's ISA; they are
// compiled three times (generic, AVX2+FMA, AVX-512) and the active ISA level picks one
// (kernels/dispatch/cpu_features.h). Other dtypes decline to the reference kernel.
#include <algorithm>
#include <cmath>
#include <vector>

#include <omp.h>

#include "kernels/cpu/attention_pack.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/simd_kernels.h"
#include "kernels/cpu/thread_scratch.h"
#include "kernels/cpu/vec_ops.h"
#include "kernels/dispatch/cpu_features.h"
#include "kernels/ref/ref_attention.h"

namespace octet {
namespace {

constexpr int64_t kCols = 16;       // columns per register tile (one AVX-512 vector)
constexpr int64_t kBlockRows = 64;  // query rows per task; a multiple of every kRows

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

struct Args {
  const AttentionShape* a;
  const float *q, *k, *v, *mask;
  float* y;
  float lowest;
  const cpu::VecTable* vec;  // the vectorized row helpers of the active ISA level
};

// A task's working memory, in its thread's scratch slots (thread_scratch.h): packed K^T,
// packed V, one score block, one query tile transposed.
struct Workspace {
  float *kt, *vp, *s, *qt;
  int64_t packed = -1;  // the b * H + h whose K and V are packed (consecutive tasks share it)
};

#define OCTET_INLINE inline __attribute__((always_inline))

template <bool kAvx512>
OCTET_INLINE void pack_head(const Args& p, int64_t b, int64_t h, Workspace& w) {
  const AttentionShape& a = *p.a;
  if (w.packed == b * a.heads + h) return;
  w.packed = b * a.heads + h;
  const int64_t skp = round_up(std::max<int64_t>(a.kv_len, 1), kCols), dvp = round_up(a.head_v, kCols);
  // K^T in blocks of kCols keys: kt[((j / kCols) * Dk + d) * kCols + j % kCols], so the
  // score tile streams one block's Dk x kCols values contiguously. Padded key columns
  // are zero, so their scores are exact zeros (never subnormal garbage, which would cost
  // the FMAs a microcode assist); nothing reads them after.
  const int64_t last_block = (skp - kCols) * a.head_k;
  std::fill(w.kt + last_block, w.kt + last_block + a.head_k * kCols, 0.0f);
  if constexpr (kAvx512) {
    cpu::attention_pack_kt_avx512(p.k + b * a.k_b + h * a.head_k, a.k_s, a.kv_len, a.head_k, w.kt);
  } else {
    for (int64_t j = 0; j < a.kv_len; ++j) {
      const float* kj = p.k + b * a.k_b + j * a.k_s + h * a.head_k;
      float* dst = w.kt + (j / kCols) * a.head_k * kCols + j % kCols;
      for (int64_t d = 0; d < a.head_k; ++d) dst[d * kCols] = kj[d];
    }
  }
  for (int64_t j = 0; j < a.kv_len; ++j) {
    const float* vj = p.v + b * a.v_b + j * a.v_s + h * a.head_v;
    float* dst = w.vp + j * dvp;
    std::copy(vj, vj + a.head_v, dst);
    std::fill(dst + a.head_v, dst + dvp, 0.0f);
  }
}

// The tiles accumulate in GCC vector types of the target's width (V: 4, 8 or 16 floats)
// so the accumulators stay in registers; a kCols-wide block is kCols / lanes vectors.
// (A float[4][16] array was kept on the stack, and a 16-float vector type under AVX2 is
// split through memory.)
// The vector types are only passed between always-inlined functions of one target, so
// GCC's note that their ABI differs between targets does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float Vec4 __attribute__((vector_size(16)));
typedef float Vec8 __attribute__((vector_size(32)));
typedef float Vec16 __attribute__((vector_size(64)));

template <typename V>
constexpr int64_t kLanes = static_cast<int64_t>(sizeof(V) / sizeof(float));
// Query rows per register tile: enough independent accumulators (rows x kCols / lanes) to
// cover the FMA latency, few enough to stay in registers (32 zmm under AVX-512, 16
// ymm/xmm otherwise). kBlockRows must be a multiple.
template <typename V>
constexpr int64_t kRows = kLanes<V> == 16 ? 8 : 4;

template <typename V>
OCTET_INLINE V load(const float* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof(V));  // an unaligned vector load
  return v;
}

template <typename V>
OCTET_INLINE void store(float* p, V v) {
  __builtin_memcpy(p, &v, sizeof(V));
}

// acc = 0 one vector at a time: `V acc[R][N] = {}` was lowered to a `rep stos` of the
// whole array on the stack (1 KiB under AVX-512) before the registers were zeroed, ~2% of
// the kernel's samples.
template <typename V, int64_t R, int64_t N>
OCTET_INLINE void zero_tile(V (&acc)[R][N]) {
#pragma GCC unroll 8
  for (int64_t r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int64_t n = 0; n < N; ++n) acc[r][n] = V{};
}

// Columns per register tile: 16 (kCols, one block of packed K^T) at 4 and 8 lanes, where
// that is already 4 or 2 vectors per row; 32 under AVX-512, so a tile holds kRows x 2
// accumulators. With one vector per row (8 accumulators) every FMA waited on the previous
// one of its chain (4 cycles latency, 2 FMAs per cycle): the products ran at ~40% of the
// core's FMA rate (DINOv2-S fp32, 257 keys x 64 channels).
template <typename V>
constexpr int64_t kTileCols = kLanes<V> == 16 ? 2 * kCols : kCols;

// One block of N vectors of keys from column j0: acc[r][n] = sum over d of q[r][d] *
// K[j0 + n * lanes][d] (the same FMAs in the same order whatever the tile width), times
// scale, stored to s[r * skp + j] for r < rows; the row maxima of columns in full kCols
// blocks kept lane-wise in mx.
template <typename V, int64_t R, int64_t N>
OCTET_INLINE void scores_block(const AttentionShape& a, const float* kt, const float* qt, int64_t j0, int64_t rows,
                               float scale, int64_t skp, int64_t full_cols, float* s, V* mx) {
  constexpr int64_t L = kLanes<V>;
  const float* kb[N];  // vector n's K^T column in its packed block of kCols keys
  for (int64_t n = 0; n < N; ++n) {
    const int64_t c = j0 + n * L;
    kb[n] = kt + (c / kCols) * a.head_k * kCols + c % kCols;
  }
  V acc[R][N];
  zero_tile<V, R, N>(acc);
  for (int64_t d = 0; d < a.head_k; ++d) {
    const float* qd = qt + d * R;
#pragma GCC unroll 4
    for (int64_t n = 0; n < N; ++n) {
      const V k = load<V>(kb[n] + d * kCols);
#pragma GCC unroll 8
      for (int64_t r = 0; r < R; ++r) acc[r][n] += qd[r] * k;
    }
  }
#pragma GCC unroll 8
  for (int64_t r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int64_t n = 0; n < N; ++n) {
      acc[r][n] *= scale;
      if (j0 + n * L < full_cols) mx[r] = acc[r][n] > mx[r] ? acc[r][n] : mx[r];
    }
  for (int64_t r = 0; r < rows; ++r)
#pragma GCC unroll 4
    for (int64_t n = 0; n < N; ++n) store<V>(s + r * skp + j0 + n * L, acc[r][n]);
}

// Scores of `rows` (<= R) query rows starting at i into s[r * skp + j], scaled and
// masked, then exponentiated: s = exp(s - row max). The row sums go to sum[r]; the
// division by them waits for output_tile's store (one multiply per output instead of a
// pass over the row).
template <typename V, int64_t R>
OCTET_INLINE void scores_tile(const Args& p, int64_t b, int64_t h, int64_t i, int64_t rows, Workspace& w, float* s,
                              float* sum) {
  constexpr int64_t L = kLanes<V>, T = kTileCols<V>;
  const AttentionShape& a = *p.a;
  const int64_t skp = round_up(std::max<int64_t>(a.kv_len, 1), kCols);
  // The tile's queries transposed, qt[d * R + r]: the inner loop then broadcasts from one
  // pointer at fixed offsets (eight row pointers each cost an increment per step).
  float* qt = w.qt;
  const float* q[R];  // a short tile repeats its last row
  for (int64_t r = 0; r < R; ++r) q[r] = p.q + b * a.q_b + (i + std::min(r, rows - 1)) * a.q_s + h * a.head_k;
  if constexpr (L == 16 && R == 8) {
    cpu::attention_transpose_q8_avx512(q, a.head_k, qt);
  } else {
    for (int64_t r = 0; r < R; ++r)
      for (int64_t d = 0; d < a.head_k; ++d) qt[d * R + r] = q[r][d];
  }
  const float scale = static_cast<float>(a.scale);
  // Without a mask or causal fill the row max is taken from the registers as the scores
  // are stored (the padded columns hold exact zeros from K's padding, so they are left
  // out); otherwise after the mask is added.
  const bool max_in_tile = !p.mask && !a.causal;
  const int64_t full_cols = a.kv_len / kCols * kCols;
  V mx[R];
  for (int64_t r = 0; r < R; ++r) mx[r] = V{} + p.lowest;
  int64_t j0 = 0;
  for (; j0 + T <= skp; j0 += T) scores_block<V, R, T / L>(a, w.kt, qt, j0, rows, scale, skp, full_cols, s, mx);
  if (j0 < skp) scores_block<V, R, kCols / L>(a, w.kt, qt, j0, rows, scale, skp, full_cols, s, mx);  // T > kCols
  for (int64_t r = 0; r < rows; ++r) {
    float* row = s + r * skp;
    const int64_t qi = i + r;
    if (p.mask) {
      const float* m = p.mask + b * a.m_b + h * a.m_h + qi * a.m_q;
      if (a.m_k == 1) {
        p.vec->binary[static_cast<int>(cpu::BinaryOp::Add)](row, m, row, a.kv_len);
      } else {
        for (int64_t j = 0; j < a.kv_len; ++j) row[j] += m[j * a.m_k];
      }
    }
    if (a.causal)
      for (int64_t j = std::max<int64_t>(a.last_key(qi) + 1, 0); j < a.kv_len; ++j) row[j] = p.lowest;
    float row_max;
    if (max_in_tile) {
      row_max = p.lowest;
      for (int64_t l = 0; l < L; ++l) row_max = std::max(row_max, mx[r][l]);
      for (int64_t j = full_cols; j < a.kv_len; ++j) row_max = std::max(row_max, row[j]);
    } else {
      row_max = p.vec->max(row, a.kv_len);
    }
    // The padded columns [kv_len, skp) are never read: output_tile stops at kv_len.
    sum[r] = p.vec->exp_sum(row, 1.0f, row_max, row, a.kv_len);
  }
}

// Y columns [d0, d0 + N lanes) of the tile's rows: (E rows . V) / sum, stored for r < rows
// (E: scores_tile's exponentials; pr[r] its row r, a short tile repeating its last).
template <typename V, int64_t R, int64_t N>
OCTET_INLINE void output_block(const Args& p, int64_t b, int64_t h, int64_t i, int64_t rows, const Workspace& w,
                               const float* const* pr, const float* sum, int64_t d0) {
  constexpr int64_t L = kLanes<V>;
  const AttentionShape& a = *p.a;
  const int64_t dvp = round_up(a.head_v, kCols);
  V acc[R][N];
  zero_tile<V, R, N>(acc);
  for (int64_t j = 0; j < a.kv_len; ++j) {
    const float* vj = w.vp + j * dvp + d0;
#pragma GCC unroll 4
    for (int64_t n = 0; n < N; ++n) {
      const V v = load<V>(vj + n * L);
#pragma GCC unroll 8
      for (int64_t r = 0; r < R; ++r) acc[r][n] += pr[r][j] * v;
    }
  }
  const int64_t width = std::min(N * L, a.head_v - d0);
  for (int64_t r = 0; r < rows; ++r) {
    // The softmax's last step, as softmax_row does it: e * (1 / sum).
    const float inv = 1.0f / sum[r];
    float* y = p.y + b * a.y_b + (i + r) * a.y_s + h * a.head_v + d0;
    if (width == N * L) {
#pragma GCC unroll 4
      for (int64_t n = 0; n < N; ++n) store<V>(y + n * L, acc[r][n] * inv);
    } else {
      float tail[N * L];
      for (int64_t n = 0; n < N; ++n) store<V>(tail + n * L, acc[r][n] * inv);
      std::copy(tail, tail + width, y);
    }
  }
}

// Y rows = (E rows . V) / sum for `rows` rows starting at i (E: scores_tile's exponentials).
template <typename V, int64_t R>
OCTET_INLINE void output_tile(const Args& p, int64_t b, int64_t h, int64_t i, int64_t rows, Workspace& w,
                              const float* s, const float* sum) {
  constexpr int64_t L = kLanes<V>, T = kTileCols<V>;
  const AttentionShape& a = *p.a;
  const int64_t skp = round_up(std::max<int64_t>(a.kv_len, 1), kCols), dvp = round_up(a.head_v, kCols);
  const float* pr[R];
  for (int64_t r = 0; r < R; ++r) pr[r] = s + std::min(r, rows - 1) * skp;
  int64_t d0 = 0;
  for (; d0 + T <= dvp; d0 += T) output_block<V, R, T / L>(p, b, h, i, rows, w, pr, sum, d0);
  if (d0 < dvp) output_block<V, R, kCols / L>(p, b, h, i, rows, w, pr, sum, d0);  // T > kCols
}

// `rows` (<= R) query rows from i through a tile of R rows: scores into s, then Y.
template <typename V, int64_t R>
OCTET_INLINE void tile(const Args& p, int64_t b, int64_t h, int64_t i, int64_t rows, Workspace& w, float* s) {
  float sum[R];
  scores_tile<V, R>(p, b, h, i, rows, w, s, sum);
  output_tile<V, R>(p, b, h, i, rows, w, s, sum);
}

// One task: (b, h) and query rows [i0, i1).
template <typename V>
OCTET_INLINE void task_body(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Workspace& w) {
  pack_head<kLanes<V> == 16>(p, b, h, w);
  const int64_t skp = round_up(std::max<int64_t>(p.a->kv_len, 1), kCols);
  constexpr int64_t R = kRows<V>;
  int64_t i = i0;
  for (; i + R <= i1; i += R) tile<V, R>(p, b, h, i, R, w, w.s + (i - i0) * skp);
  // The block's last rows (257 = 4 x 64 + 1 for DINOv2): a tile of the next power of two
  // rows, so one leftover row no longer costs a whole kRows tile's FMAs. Each row's sums
  // run in the same order at any tile height, so the results keep every bit.
  const int64_t rows = i1 - i;
  float* s = w.s + (i - i0) * skp;
  if (rows == 0) return;
  if (rows == 1) return tile<V, 1>(p, b, h, i, rows, w, s);
  if (rows == 2) return tile<V, 2>(p, b, h, i, rows, w, s);
  if (R == 4 || rows <= 4) return tile<V, 4>(p, b, h, i, rows, w, s);
  tile<V, R>(p, b, h, i, rows, w, s);
}

using TaskFn = void (*)(const Args&, int64_t, int64_t, int64_t, int64_t, Workspace&);

void task_generic(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Workspace& w) {
  task_body<Vec4>(p, b, h, i0, i1, w);
}
__attribute__((target("avx2,fma"))) void task_avx2(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1,
                                                    Workspace& w) {
  task_body<Vec8>(p, b, h, i0, i1, w);
}
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void task_avx512(
    const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Workspace& w) {
  task_body<Vec16>(p, b, h, i0, i1, w);
}

TaskFn task_for(IsaLevel level) {
  switch (level) {
    case IsaLevel::Avx512: return task_avx512;
    case IsaLevel::Avx2: return task_avx2;
    default: return task_generic;
  }
}

bool prepare(const Node& node, std::unique_ptr<KernelState>&) {
  const Value* q = node.input(0);
  return q && q->type.dtype == DType::Float32;
}

void attention_f32(KernelContext& ctx) {
  const AttentionShape a = attention_shape(ctx);
  if (ctx.input(0).dtype() != DType::Float32) ctx.fail("the optimized kernel takes float32, got ", ctx.input(0).describe());
  Tensor& y = ctx.allocate_output_uninitialized(0, DType::Float32, a.out_shape);
  if (a.batch == 0 || a.q_len == 0 || a.heads * a.head_v == 0) return;
  const Tensor* mask = ctx.optional_input(3);
  const Args p{&a, ctx.input(0).data<float>() + a.q_off, ctx.input(1).data<float>() + a.k_off,
               ctx.input(2).data<float>() + a.v_off,
               mask ? mask->data<float>() : nullptr, y.mutable_data<float>(),
               static_cast<float>(attention_lowest(DType::Float32)), &cpu::vec_ops()};
  const TaskFn task = task_for(active_isa());
  const int64_t skp = round_up(std::max<int64_t>(a.kv_len, 1), kCols);
  auto make_scratch = [&] {
    using cpu::Scratch;
    using cpu::thread_scratch_as;
    return Workspace{thread_scratch_as<float>(Scratch::AttentionKeys, a.head_k * skp),
                   thread_scratch_as<float>(Scratch::AttentionValues, a.kv_len * round_up(a.head_v, kCols)),
                   thread_scratch_as<float>(Scratch::AttentionScores, kBlockRows * skp),
                   // the most rows any level's tile has
                   thread_scratch_as<float>(Scratch::AttentionQueries, a.head_k * kRows<Vec16>)};
  };
  cpu::parallel_attention_tasks(ctx, a.batch, a.heads, a.q_len, kBlockRows, make_scratch,
                                [&](Workspace& w, int64_t b, int64_t h, int64_t i0, int64_t i1) { task(p, b, h, i0, i1, w); });
}

}  // namespace

void register_cpu_attention(KernelRegistry& r) {
  r.add("octet", "Attention", KernelDef{attention_f32, prepare});
  register_cpu_qattention(r);
}

}  // namespace octet
