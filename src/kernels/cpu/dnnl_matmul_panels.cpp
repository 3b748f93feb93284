// octet.MatMulBias with GeLU(erf) at a big Y: the product as column panels of B.
//
// Without an addend the GeLU is octet's own pass over Y after oneDNN's product (see
// MatMulState::own_gelu). At DINOv2-S's FFN up-projection (257 x 384 x 1536, 1 thread) Y
// is 1.6 MB and B 2.4 MB: Y is gone from the 2 MB L2 when the pass reads it, and the pass
// cost 0.08 ms on a 1.55 ms product standalone, 0.18 ms in the model. Run instead as
// panels of B's 64-column blocks sized so A, the B panel and the Y panel fit in L2 together
// (384 columns there), each product writing a scratch block that the GeLU reads while
// cached and stores into Y's columns: 1.42-1.58 ms for product and GeLU against 1.64-1.73
// (bench in bench/results/2026-11-27_fp32-vs-openvino_session17_xeon-amx-2core.md); in the
// model the 12 FFN up-projections took 0.95-0.97x at 1 thread. What counts is each thread's
// share of Y: at MiniLM's 128 rows (0.8 MB) or at 2 threads of DINOv2 (0.8 MB per core) Y
// stays cached, the pass costs next to nothing and the panels measured no gain (their
// extra fork/joins only cost), so those keep the one product.
//
// Exactness: oneDNN's brgemm sums each output over K in an order that does not depend on
// how many 64-column blocks the product has, and the GeLU is the same elementwise pass, so
// Y is bit-identical to the one product's: tests/unit/cpu_matmul_panels_test.cpp checks it
// on K off the 16-row block, N off the 64-column block and DINOv2's shape (if a future
// oneDNN split K differently per N, that test fails rather than the results drifting).
//
// The panels need B packed as panels of 64 contiguous columns (the layout the decode GEMV
// also reads, gemv_panel_rows), whose blocks do not depend on N: a panel of B is then the
// same layout at a narrower N, at an offset. Other layouts (oneDNN below AVX-512), strided
// or batched A, or no usable oneDNN panel primitive leave the node to the one product.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "kernels/cpu/dnnl_matmul.h"
#include "kernels/cpu/simd/f32_gemv.h"
#include "kernels/cpu/simd_kernels.h"
#include "kernels/cpu/thread_scratch.h"
#include "kernels/cpu/vec_ops.h"

namespace octet::dnnl_cpu {
namespace {

// Y past this many bytes no longer stays in a 2 MB L2 beside B while the product runs.
constexpr int64_t kWholeYBytes = int64_t{1} << 20;
// A (M x K) and one panel's B (K x width) and Y (M x width) together within this many bytes.
constexpr int64_t kPanelBytes = int64_t{1} << 20;
constexpr int64_t kBlock = cpu::kF32GemvPanel;  // B's 64-column blocks

std::atomic<bool>& panels_switch() {
  static std::atomic<bool> on{[] {
    const char* env = std::getenv("OCTET_F32_GELU_PANELS");
    return !env || std::strcmp(env, "0") != 0;
  }()};
  return on;
}

// B's packed descriptor narrowed to `width` columns (a panel starting on a block boundary):
// the blocks' layout and strides do not depend on N, only N's dims do.
dnnl::memory::desc panel_desc(const dnnl::memory::desc& packed, int64_t width) {
  dnnl_memory_desc_t d = packed.data;
  d.dims[1] = width;
  d.padded_dims[1] = (width + kBlock - 1) / kBlock * kBlock;
  return dnnl::memory::desc(d);
}

}  // namespace

void set_gelu_panels_enabled(bool on) { panels_switch().store(on, std::memory_order_relaxed); }
bool gelu_panels_enabled() { return panels_switch().load(std::memory_order_relaxed); }

int64_t gelu_panel_width(int64_t m, int64_t k, int64_t n, int threads) {
  // Each thread writes its share of Y's rows into its own core's L2.
  const int64_t rows = (m + threads - 1) / std::max(threads, 1);
  if (rows * n * static_cast<int64_t>(sizeof(float)) <= kWholeYBytes) return 0;
  const int64_t width = kPanelBytes / (static_cast<int64_t>(sizeof(float)) * (rows + k)) / kBlock * kBlock;
  const int64_t panel = std::max(width, kBlock);
  return panel < n ? panel : 0;
}

std::shared_ptr<const MatMulState::Entry> MatMulState::panel_primitive(const MatMulProblem& p, int64_t width,
                                                                       int threads) const {
  const int64_t m = p.src[0], k = p.src[1];
  auto entry = panel_cache_.get({threads, m, width, p.bias.empty() ? 0 : 1}, [&] {
    const auto src = f32_desc({m, k}), dst = f32_desc({m, width}), bias = f32_desc({1, width});
    return std::make_shared<Entry>(first_usable_matmul(
        {{panel_desc(packed_->get_desc(), width), true}},
        [&](const dnnl::memory::desc& wei) {
          return p.bias.empty() ? dnnl::matmul::desc(src, wei, dst) : dnnl::matmul::desc(src, wei, bias, dst);
        },
        attributes(p)));
  });
  return entry->usable ? entry : nullptr;
}

bool MatMulState::execute_gelu_panels(const KernelContext& ctx, const MatMulProblem& p, Tensor& out) const {
  if (!gelu_panels_enabled() || gemv_k_stride_ <= 0) return false;  // B not in 64-column panels
  if (p.src.size() != 2 || !p.src_strides.empty() || p.wei != packed_dims_) return false;
  const int64_t m = p.src[0], k = p.src[1], n = p.wei[1];
  const int64_t width = gelu_panel_width(m, k, n, ctx.threads());
  if (width == 0) return false;
  const int64_t last = n % width == 0 ? width : n % width;  // the last panel's width
  const auto full = panel_primitive(p, width, ctx.threads());
  const auto tail = last == width ? full : panel_primitive(p, last, ctx.threads());
  if (!full || !tail) return false;

  const float* b = static_cast<const float*>(packed_->get_data_handle());
  const float* bias = p.bias.empty() ? nullptr : ctx.input(p.bias_from).data<float>();
  float* y = out.mutable_data<float>();
  float* block = cpu::thread_scratch_as<float>(cpu::Scratch::GeluPanel, m * width);
  for (int64_t c0 = 0; c0 < n; c0 += width) {
    const int64_t w = std::min(width, n - c0);
    const Entry& e = w == width ? *full : *tail;
    std::unordered_map<int, dnnl::memory> args;
    args[DNNL_ARG_SRC] = wrap(f32_desc({m, k}), ctx.input(0).raw());
    args[DNNL_ARG_WEIGHTS] = wrap(panel_desc(packed_->get_desc(), w), b + c0 / kBlock * gemv_k_stride_ * kBlock);
    args[DNNL_ARG_DST] = wrap(f32_desc({m, w}), block);
    if (bias) args[DNNL_ARG_BIAS] = wrap(f32_desc({1, w}), bias + c0);
    try {
      run_primitive(e.primitive, e.scratchpad, args);
    } catch (const dnnl::error& err) {
      ctx.fail("oneDNN matmul failed: ", err.what());
    }
    cpu::parallel_ranges(ctx, m, m * w, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) cpu::unary(cpu::UnaryOp::GeluErfFast, block + r * w, y + r * n + c0, w);
    });
  }
  ++panel_runs_;
  return true;
}

}  // namespace octet::dnnl_cpu
