// The float32 decode GEMV for MatMul, Gemm and octet.MatMulBias with a constant 2-D B
// (dnnl_matmul.h): A of at most kF32GemvMaxRows rows, B read from the copy oneDNN prepacked
// at session creation, columns shared over the threads by share_work (no OpenMP region).
//
// Why not oneDNN at decode: SmolLM2-135M's fp32 decode step streams ~513 MiB of weights, and
// oneDNN 2.6's matmul at M = 1 (brgemm on the blocked B, under an OpenMP fork/join per call)
// reached ~55 GB/s of the ~80 GB/s two cores read on the test EPYC; the step was 94%
// MatMul. Here each 64-column panel of B is one contiguous stream, read once, and two
// threads claim panels from one counter (work_sharing.h: a helper busy elsewhere costs its
// caller nothing but its share).
//
// Memory: no copy of B of its own. oneDNN 2.6's AVX-512 matmul asks for float32 weights in
// BA16a64b, which is exactly 64-column panels of K_pad contiguous rows (f32_gemv.h), so the
// GEMV reads that copy and the prefill keeps running oneDNN's brgemm on it unchanged (same
// TTFT, same peak RSS: the graph's copy is still released). gemv_panel_rows() checks the
// memory descriptor oneDNN chose; any other layout (another oneDNN, another ISA, weight
// packing off) leaves every shape to oneDNN as before.
// A big packed B (the LM head) lives in 2 MiB pages (MatMulState's constructor): a stream
// of 4 KiB pages meets a TLB miss and a stopped hardware prefetcher every 4 KiB.
//
// ISA: AVX-512 only. oneDNN picks BA16a64b only when it runs AVX-512 itself (OCTET_ISA caps
// it to AVX2 or SSE4.1 in a process of its own, and there B stays plain), so a lower
// octet level (ScopedIsaLevel) runs oneDNN on the packed B as it did before.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "kernels/cpu/dnnl_matmul.h"
#include "kernels/cpu/simd/f32_gemv.h"
#include "kernels/cpu/vec_ops.h"
#include "kernels/cpu/work_sharing.h"
#include "kernels/dispatch/cpu_features.h"

namespace octet::dnnl_cpu {
namespace {

// Weight bytes below which a GEMV runs on its caller alone (nothing worth handing out
// below two panels' worth of claims); the bound the MatMulNBits GEMVs use (matmul_nbits.cpp).
constexpr int64_t kShareMinBytes = 64 * 1024;
// Panels are claimed in chunks of at least this many weight bytes (only small K needs more
// than one panel for it): a claim is an atomic on a line both cores write.
constexpr int64_t kShareBytes = 32 * 1024;

std::atomic<bool>& gemv_switch() {
  static std::atomic<bool> on{[] {
    const char* env = std::getenv("OCTET_F32_GEMV");
    return !env || std::strcmp(env, "0") != 0;
  }()};
  return on;
}

}  // namespace

void set_f32_gemv_enabled(bool on) { gemv_switch().store(on, std::memory_order_relaxed); }
bool f32_gemv_enabled() { return gemv_switch().load(std::memory_order_relaxed); }

int64_t gemv_panel_rows(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.ndims != 2 || d.format_kind != dnnl_blocked || d.data_type != dnnl_f32 || d.offset0 != 0) return 0;
  if (d.extra.flags != 0 || d.padded_offsets[0] != 0 || d.padded_offsets[1] != 0) return 0;
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  const int64_t kp = d.padded_dims[0], w = cpu::kF32GemvPanel;
  if (d.padded_dims[1] % w != 0 || b.strides[1] != kp * w) return 0;
  if (b.inner_nblks == 1 && b.inner_idxs[0] == 1 && b.inner_blks[0] == w && b.strides[0] == w) return kp;  // aB64b
  if (b.inner_nblks == 2 && b.inner_idxs[0] == 0 && b.inner_idxs[1] == 1 && b.inner_blks[1] == w &&
      kp % b.inner_blks[0] == 0 && b.strides[0] == b.inner_blks[0] * w)
    return kp;  // BA<kb>a64b
  return 0;
}

bool packed_product_fits(const MatMulState& s, const MatMulProblem& p) {
  if (!s.gemv_panels() || active_isa() < IsaLevel::Avx512) return false;
  if (p.src.size() != 2 || !p.src_strides.empty() || p.wei != s.packed_dims() || s.spec().alpha != 1.0f) return false;
  const int64_t m = p.src[0], n = p.wei[1];
  if (!p.bias.empty() && p.bias.back() != n) return false;
  if (!p.addend.empty()) {
    if (p.addend_scale != 1.0f || p.addend.size() != 2 || p.addend[1] != n) return false;
    if (p.addend[0] != 1 && p.addend[0] != m) return false;
  }
  return true;
}

bool gemv_applies(const MatMulState& s, const MatMulProblem& p) {
  return f32_gemv_enabled() && packed_product_fits(s, p) && p.src[0] <= cpu::kF32GemvMaxRows;
}

void run_gemv(const KernelContext& ctx, const MatMulState& s, const MatMulProblem& p, const std::vector<GemvPart>& parts) {
  const int64_t m = p.src[0], k = p.wei[0], n = p.wei[1];
  cpu::F32GemvArgs g;
  g.k_stride = s.gemv_k_stride(), g.K = k, g.rows = m;
  g.a = ctx.input(0).data<float>(), g.lda = k;
  const float* bias = p.bias.empty() ? nullptr : ctx.input(p.bias_from).data<float>();
  const float* addend = p.addend.empty() ? nullptr : ctx.input(p.addend_from).data<float>();
  const int64_t addend_ld = !addend || p.addend[0] == 1 ? 0 : n;
  const Activation act = s.spec().activation;
  constexpr int W = cpu::kF32GemvPanel;
  // One panel at a time: columns [n0, n0 + cols) of Y, written where they belong (straight
  // into the part that holds them, or through a stack tile when a panel straddles two
  // parts), then the epilogue in oneDNN's order (MatMulState::attributes): bias,
  // activation, residual, while the columns are in cache.
  auto run = [&](int64_t p0, int64_t p1) {
    alignas(64) float tile[cpu::kF32GemvMaxRows * W];
    size_t part = 0;
    for (int64_t q = p0; q < p1; ++q) {
      const int64_t n0 = q * W, cols = std::min<int64_t>(n - n0, W);
      while (parts[part].col0 + parts[part].width <= n0) ++part;
      const GemvPart& dst = parts[part];
      const bool direct = n0 + cols <= dst.col0 + dst.width;
      cpu::F32GemvArgs one = g;
      one.b = s.gemv_panels() + q * g.k_stride * W;
      one.N = cols;
      one.y = direct ? dst.y + (n0 - dst.col0) : tile;
      one.ldy = direct ? dst.width : W;
      cpu::f32_gemv_avx512(one, 0, 1);
      for (int64_t r = 0; r < m; ++r) {
        float* y = one.y + r * one.ldy;
        if (bias) cpu::add_bias(y, bias + n0, y, cols);
        if (act != Activation::None) cpu::gelu(y, y, cols, act == Activation::GeluTanh);
        if (addend) cpu::add_bias(y, addend + r * addend_ld + n0, y, cols);
      }
      if (direct) continue;
      for (size_t i = part; i < parts.size() && parts[i].col0 < n0 + cols; ++i) {
        const int64_t c0 = std::max(parts[i].col0, n0), c1 = std::min(parts[i].col0 + parts[i].width, n0 + cols);
        for (int64_t r = 0; r < m; ++r)
          std::memcpy(parts[i].y + r * parts[i].width + (c0 - parts[i].col0), tile + r * W + (c0 - n0),
                      static_cast<size_t>(c1 - c0) * sizeof(float));
      }
    }
  };
  const int64_t panels = (n + W - 1) / W;
  const int64_t panel_bytes = k * W * static_cast<int64_t>(sizeof(float));
  const int threads = panels * panel_bytes < kShareMinBytes ? 1 : ctx.threads();
  cpu::share_work(threads, panels, (kShareBytes + panel_bytes - 1) / panel_bytes, run);
}

}  // namespace octet::dnnl_cpu
