// The float32 panel GEMM for MatMul, Gemm and octet.MatMulBias with a constant 2-D B
// (dnnl_matmul.h): more rows of A than the decode GEMV takes, B read from the copy oneDNN
// prepacked as 64-column panels at session creation, the epilogue run per block of rows
// while it is in L1. See simd/f32_panel_gemm_avx512.cpp for why it is octet's own.
//
// Threads: each takes a share of the rows (see run_panel_gemm). Every output is summed
// over K in order on whichever thread computes it, so Y does not depend on the thread count.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "kernels/cpu/dnnl_matmul.h"
#include "kernels/cpu/simd/f32_panel_gemm.h"
#include "kernels/cpu/vec_ops.h"

namespace octet::dnnl_cpu {
namespace {

constexpr int64_t W = cpu::kF32GemvPanel;
// Products below this many multiply-adds run on one thread: a parallel region costs more.
constexpr int64_t kShareMinMacs = int64_t{1} << 20;
// A thread's rows go through all its panels in passes of at most this many bytes of A, so
// that the pass stays in L2 while every panel re-reads it (past that, A comes from L3 once
// per panel). DINOv2-S fp32 batch 8 (2056 rows, 2 threads; one pass would be 1.6 MB of A per
// thread, 6.3 MB in the FFN down-projection): p50 331-333 ms in one pass, 319-320 at 1 MiB,
// 312-313 at 512 KiB, 306 at 256 KiB; at batch 1 (A 0.2 / 0.8 MB per thread) 256 KiB cost
// the down-projection 11.4-11.6 ms against 10.1-10.6 at 512 KiB or 1 MiB (12 layers).
constexpr int64_t kPassBytes = int64_t{512} << 10;

std::atomic<bool>& panel_gemm_switch() {
  static std::atomic<bool> on{[] {
    const char* env = std::getenv("OCTET_F32_PANEL_GEMM");
    return !env || std::strcmp(env, "0") != 0;
  }()};
  return on;
}

// The epilogue after the bias, in oneDNN's order (MatMulState::attributes): activation,
// then the residual.
struct Finish {
  cpu::UnaryFn activation = nullptr;
  const float* addend = nullptr;
  int64_t addend_ld = 0;  // 0: one row repeated
  int64_t row0 = 0, col0 = 0;  // the call's first row and the panel's first column in Y
};

void finish_rows(void* context, float* y, int64_t ldy, int64_t row, int64_t rows, int64_t cols) {
  const Finish& f = *static_cast<const Finish*>(context);
  for (int64_t r = 0; r < rows; ++r, y += ldy) {
    if (f.activation) f.activation(y, y, cols);
    if (f.addend) cpu::add_bias(y, f.addend + (f.row0 + row + r) * f.addend_ld + f.col0, y, cols);
  }
}

// Parts' column boundaries on panel boundaries: each panel is written into one part.
bool parts_aligned(const std::vector<int64_t>& split) {
  int64_t col0 = 0;
  for (int64_t part : split) {
    if (col0 % W != 0) return false;
    col0 += part;
  }
  return true;
}

}  // namespace

void set_f32_panel_gemm_enabled(bool on) { panel_gemm_switch().store(on, std::memory_order_relaxed); }
bool f32_panel_gemm_enabled() { return panel_gemm_switch().load(std::memory_order_relaxed); }

bool panel_gemm_applies(const MatMulState& s, const MatMulProblem& p) {
  return f32_panel_gemm_enabled() && packed_product_fits(s, p) && p.src[0] > cpu::kF32GemvMaxRows &&
         parts_aligned(s.spec().split);
}

void run_panel_gemm(const KernelContext& ctx, const MatMulState& s, const MatMulProblem& p,
                    const std::vector<GemvPart>& parts) {
  s.count_panel_gemm_run();
  const int64_t m = p.src[0], k = p.wei[0], n = p.wei[1];
  const int64_t panels = (n + W - 1) / W;
  const float* a = ctx.input(0).data<float>();
  const float* bias = p.bias.empty() ? nullptr : ctx.input(p.bias_from).data<float>();
  Finish finish;
  const Activation act = s.spec().activation;
  if (act != Activation::None) {
    // The GeLU(erf) of the oneDNN path's own pass (MatMulState::own_gelu).
    const cpu::UnaryOp op = act == Activation::GeluTanh ? cpu::UnaryOp::GeluTanh : cpu::UnaryOp::GeluErfFast;
    finish.activation = cpu::vec_ops().unary[static_cast<int>(op)];
  }
  if (!p.addend.empty()) {
    finish.addend = ctx.input(p.addend_from).data<float>();
    finish.addend_ld = p.addend[0] == 1 ? 0 : n;
  }
  // Each thread a share of the rows (whole register blocks) through all panels: its part
  // of A, of Y and of the residual stays with its core from one layer to the next, and B's
  // panels stream through both cores, prefetched. Measured at 2 threads against a run of
  // panels per thread over all rows: DINOv2-S fp32 b1 40.1-40.2 ms against 40.6-41.5 (the
  // FFN down-projection, reading the up-projection's output, 10.1-10.2 against 11.2-11.5 ms
  // over 12 layers), MiniLM-L6 seq 128 9.36-9.48 against 10.0-10.4. Fewer row blocks than
  // threads (a few rows): each thread a run of panels instead.
  const int64_t blocks = (m + cpu::kF32GemmRows - 1) / cpu::kF32GemmRows;
  const int threads = m * k * n < kShareMinMacs ? 1 : std::max(1, ctx.threads());
  const bool by_rows = blocks >= threads;
  const int64_t rows_per_pass =
      std::max<int64_t>(1, kPassBytes / (k * int64_t{sizeof(float)}) / cpu::kF32GemmRows) * cpu::kF32GemmRows;
  auto panel_b = [&](int64_t q) { return s.gemv_panels() + q * s.gemv_k_stride() * W; };
  // Panels [q0, q1) for rows [r0, r1); `then_q0`: the same panels follow for more rows.
  auto run = [&](int64_t r0, int64_t r1, int64_t q0, int64_t q1, bool then_q0) {
    size_t part = 0;
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t n0 = q * W;
      while (parts[part].col0 + parts[part].width <= n0) ++part;
      const GemvPart& dst = parts[part];
      Finish f = finish;
      f.row0 = r0, f.col0 = n0;
      cpu::F32PanelGemmArgs g;
      g.a = a + r0 * k, g.lda = k, g.rows = r1 - r0, g.K = k;
      g.b = panel_b(q);
      g.next_b = q + 1 < q1 ? panel_b(q + 1) : then_q0 ? panel_b(q0) : nullptr;
      g.y = dst.y + r0 * dst.width + (n0 - dst.col0), g.ldy = dst.width;
      g.cols = std::min(W, n - n0);
      g.bias = bias ? bias + n0 : nullptr;
      if (f.activation || f.addend) g.finish = finish_rows, g.finish_context = &f;
      cpu::f32_panel_gemm_avx512(g);
    }
  };
  auto run_thread = [&](int t) {
    if (by_rows) {
      const int64_t r0 = std::min(m, blocks * t / threads * cpu::kF32GemmRows);
      const int64_t r1 = std::min(m, blocks * (t + 1) / threads * cpu::kF32GemmRows);
      for (int64_t r = r0; r < r1; r += rows_per_pass)
        run(r, std::min(r1, r + rows_per_pass), 0, panels, r + rows_per_pass < r1);
    } else {
      const int64_t q0 = panels * t / threads, q1 = panels * (t + 1) / threads;
      for (int64_t r = 0; r < m; r += rows_per_pass) run(r, std::min(m, r + rows_per_pass), q0, q1, r + rows_per_pass < m);
    }
  };
  if (threads <= 1) {
    run_thread(0);
  } else {
    // The team may be smaller than asked (a run inside the caller's own parallel region
    // gets one thread): its members take the planned shares in turn.
#pragma omp parallel num_threads(threads)
    for (int t = omp_get_thread_num(); t < threads; t += omp_get_num_threads()) run_thread(t);
  }
}

}  // namespace octet::dnnl_cpu
