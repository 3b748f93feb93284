// Per-thread, grow-only scratch memory for kernels' per-run temporaries: once a thread has
// seen a size, its runs allocate nothing (no malloc, and no zeroing as a std::vector's
// resize does). OpenMP and oneDNN keep their worker threads for the process's life, so a
// thread's buffers serve every run after the first.
//
// One buffer per slot: a kernel's temporaries stay valid while it calls into code that
// takes scratch of its own (a quantized A is live while oneDNN's scratchpad is in use).
// Contents are uninitialized and belong to the caller until it returns.
#pragma once

#include <cstddef>
#include <cstdint>

namespace octet::cpu {

enum class Scratch {
  DnnlScratchpad,  // oneDNN primitives' user scratchpad (dnnl_common.cpp)
  ConvSrc, ConvDst,  // a Conv's X and Y in oneDNN's layout (dnnl_conv_state.cpp)
  // The int8 GEMM and its callers (dnnl_int8_gemm.h).
  QuantizedA, SplitA, Sums, SplitSums, RowScales, RowZeros, PlainB, Columns,
  // octet.QMatMul (dnnl_qmatmul_state.cpp): an A row scaled by the folded smoothing, and
  // in the epilogue a float Y row before it is quantized and its normalized (LayerNorm) form.
  ScaledA, EpilogueRow, EpilogueNormalized,
  // The float attention kernel (attention.cpp): packed K^T and V, scores, query tile.
  AttentionKeys, AttentionValues, AttentionScores, AttentionQueries,
  // The grouped attention kernel's scores (grouped_attention.cpp).
  GroupedAttentionScores,
  // The int8 attention kernel (qattention.cpp): all of one thread's buffers, carved.
  QAttention,
  // MatMulNBits (matmul_nbits.cpp): A arranged for the GEMV (float or integer codes), a
  // dequantized weight panel, and the integer path's per-run scales and zero-point terms.
  NbitsA, NbitsPanel, NbitsAScales, NbitsAZero,
  kCount
};

void* thread_scratch(Scratch slot, size_t bytes);

template <typename T>
T* thread_scratch_as(Scratch slot, int64_t count) {
  return static_cast<T*>(thread_scratch(slot, static_cast<size_t>(count) * sizeof(T)));
}

}  // namespace octet::cpu
