// The octet.QMatMul kernel: checks the run's tensors against what the state was built for,
// quantizes A, and runs the fused primitive or raw sums + epilogue; anything else goes to
// the reference kernel. See dnnl_qmatmul.h.
#include "kernels/cpu/dnnl_qmatmul.h"

#include <algorithm>
#include <atomic>
#include <string>

#include <omp.h>

#include "kernels/cpu/quant_ops.h"
#include "kernels/cpu/simd_kernels.h"

namespace octet::dnnl_cpu {
namespace {

// The reference kernel, reading B unpacked from the state (the graph's copy may be gone).
void run_reference(KernelContext& ctx, const QMatMulState& state) {
  state.count_reference_run();
  cpu::count_int8_reference_run();
  const Tensor b = state.gemm().unpack();
  run_reference_kernel(ctx, 3, &b);
}

// A into the product's uint8 domain: as it is (uint8 from the producer), shifted (int8),
// or quantized (float), with each row's scale and zero point in sa / za.
const uint8_t* quantize_a(KernelContext& ctx, const QMatMulState& state, const Tensor& a, DType a_type, int64_t m,
                          int64_t k, float* sa, int32_t* za) {
  if (a_type == DType::UInt8) {
    std::fill(sa, sa + m, state.static_scale());
    std::fill(za, za + m, state.static_zero_point());
    return a.data<uint8_t>();  // quantized by the producer: no pass of its own
  }
  uint8_t* scratch = thread_scratch_as<uint8_t>(Scratch::QuantizedA, m * k);
  if (a_type == DType::Int8) {
    const int8_t* pa = a.data<int8_t>();
    cpu::parallel_ranges(ctx, m, m * k, [&](int64_t begin, int64_t end) { state.shift_rows(pa, begin, end, scratch, sa, za); });
  } else {
    const float* pa = a.data<float>();
    cpu::parallel_ranges(ctx, m, m * k, [&](int64_t begin, int64_t end) { state.quantize_rows(pa, begin, end, scratch, sa, za); });
  }
  return scratch;
}

// Y, and with a per-row Y its rows' scale and zero point (Y's shape without its last dim).
QMatMulState::Output allocate_outputs(KernelContext& ctx, const QMatMulState& state,
                                      const std::vector<int64_t>& out_shape) {
  QMatMulState::Output out{ctx.output_wanted(0)
                               ? ctx.allocate_output_uninitialized(0, state.output_dtype(), out_shape).mutable_raw()
                               : nullptr};
  const std::vector<int64_t> lead(out_shape.begin(), out_shape.end() - 1);
  if (state.per_row_y()) {
    out.row_scale = ctx.allocate_output_uninitialized(1, DType::Float32, lead).mutable_data<float>();
    out.row_zero = ctx.allocate_output_uninitialized(2, DType::Int32, lead).mutable_data<int32_t>();
  }
  if (state.has_norm()) {
    out.norm_q = ctx.allocate_output_uninitialized(1, DType::UInt8, out_shape).mutable_data<uint8_t>();
    out.norm_scale = ctx.allocate_output_uninitialized(2, DType::Float32, lead).mutable_data<float>();
    out.norm_zero = ctx.allocate_output_uninitialized(3, DType::Int32, lead).mutable_data<int32_t>();
    if (ctx.output_wanted(4))
      out.norm_y = ctx.allocate_output_uninitialized(4, DType::Float32, out_shape).mutable_data<float>();
  }
  return out;
}

// The row-block plan of a per-token product: each thread's share of the M rows (split
// evenly), cut into blocks of near-equal size whose int32 sums stay in L2 next to the
// epilogue that reads them.
struct RowBlocks {
  std::vector<int64_t> bounds;       // block b is rows [bounds[b], bounds[b + 1])
  std::vector<int64_t> first_block;  // thread t runs blocks [first_block[t], first_block[t + 1])
};

// Rows per block: 1 MiB of int32 sums. Measured on MiniLM-L6 / DINOv2 (2-core EPYC, 1 and
// 2 threads): 128 KiB blocks (~21 rows at N = 1536) ran 3-4% slower than one block per
// thread (each small product streams all of B again), 512 KiB 0.5% slower, 1 MiB the same
// as one block; the bound keeps the scratch small for long inputs.
int64_t block_row_target(int64_t n) { return std::max<int64_t>(4, (int64_t{1} << 20) / (4 * std::max<int64_t>(n, 1))); }

RowBlocks plan_row_blocks(int64_t m, int64_t n, int threads) {
  RowBlocks p;
  const int64_t target = block_row_target(n);
  p.bounds.push_back(0);
  for (int t = 0; t < threads; ++t) {
    p.first_block.push_back(static_cast<int64_t>(p.bounds.size()) - 1);
    const int64_t begin = m * t / threads, end = m * (t + 1) / threads, rows = end - begin;
    const int64_t blocks = rows == 0 ? 0 : (rows + target - 1) / target;
    for (int64_t b = 1; b <= blocks; ++b) p.bounds.push_back(begin + rows * b / blocks);
  }
  p.first_block.push_back(static_cast<int64_t>(p.bounds.size()) - 1);
  return p;
}

// The per-token product in one parallel region: each thread takes its row blocks and, per
// block, quantizes A's rows (a float or int8 A: their parameters go to row_scale /
// row_zero), runs the product for those rows on one thread and the epilogue while the
// block's int32 sums are in cache, instead of three passes over all rows (quantize,
// product, epilogue) with a fork/join each. A uint8 A comes with its rows' sa / za. False
// when oneDNN has no primitive for a block size (before anything is written).
bool run_row_blocks(KernelContext& ctx, const QMatMulState& state, const void* a, DType a_type, const float* sa,
                    const int32_t* za, float* row_scale, int32_t* row_zero, const float* residual, int64_t m,
                    const std::vector<int64_t>& out_shape) {
  const int64_t k = state.k(), n = state.n();
  const int threads = static_cast<int>(std::min<int64_t>(ctx.threads(), m));
  const RowBlocks plan = plan_row_blocks(m, n, threads);
  for (size_t b = 0; b + 1 < plan.bounds.size(); ++b)
    if (!state.gemm().prepare_serial(plan.bounds[b + 1] - plan.bounds[b])) return false;
  const QMatMulState::Output out = allocate_outputs(ctx, state, out_shape);
  const bool quantize = a_type != DType::UInt8;
  if (quantize) {
    sa = row_scale;
    za = row_zero;
  }
  std::atomic<bool> failed{false};
  std::string error;
  auto run_thread = [&](int t) {
    for (int64_t b = plan.first_block[t]; b < plan.first_block[t + 1]; ++b) {
      const int64_t r0 = plan.bounds[b], r1 = plan.bounds[b + 1], rows = r1 - r0;
      const uint8_t* src = a_type == DType::UInt8 ? static_cast<const uint8_t*>(a) + r0 * k : nullptr;
      if (quantize) {
        uint8_t* qa = thread_scratch_as<uint8_t>(Scratch::QuantizedA, rows * k);
        if (a_type == DType::Float32)
          state.quantize_rows(static_cast<const float*>(a) + r0 * k, 0, rows, qa, row_scale + r0, row_zero + r0);
        else
          state.shift_rows(static_cast<const int8_t*>(a) + r0 * k, 0, rows, qa, row_scale + r0, row_zero + r0);
        src = qa;
      }
      int32_t* sums = thread_scratch_as<int32_t>(Scratch::Sums, rows * n);
      try {
        state.gemm().serial_sums(src, rows, sums);
      } catch (const dnnl::error& e) {
        if (!failed.exchange(true)) error = e.what();
        return;
      }
      state.epilogue_rows(sums, sa, za, residual, r0, r1, out);
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
  if (failed) ctx.fail("oneDNN int8 matmul failed: ", error);
  return true;
}

void qmatmul_kernel(KernelContext& ctx) {
  const auto& state = ctx.state_as<QMatMulState>();
  const Tensor& a = ctx.input(0);
  const int64_t k = state.k(), n = state.n();
  const DType a_type = !state.quantized_a() ? DType::Float32 : state.int8_activation() ? DType::Int8 : DType::UInt8;
  if (a.dtype() != a_type || a.rank() < 1 || a.shape().back() != k || a.numel() == 0 || n == 0)
    return run_reference(ctx, state);  // empty, or not what inference promised: its errors
  std::vector<int64_t> out_shape = a.shape();
  out_shape.back() = n;
  const float* residual = nullptr;
  if (state.has_residual()) {
    const Tensor* r = ctx.optional_input(7);
    if (!r || r->dtype() != DType::Float32 || r->shape() != out_shape) return run_reference(ctx, state);
    residual = r->data<float>();
  }
  const int64_t m = a.numel() / k;

  const float* sa = nullptr;
  const int32_t* za = nullptr;
  const uint8_t* qa = nullptr;
  if (state.per_row_a()) {
    // The producer quantized each row and wrote its parameters: read them as they are.
    const Tensor* s = ctx.optional_input(1);
    const Tensor* z = ctx.optional_input(2);
    if (!s || !z || s->dtype() != DType::Float32 || z->dtype() != DType::Int32 || s->numel() != m ||
        z->numel() != m || s->rank() + 1 != a.rank() || z->rank() + 1 != a.rank())
      return run_reference(ctx, state);
    qa = a.data<uint8_t>();
    sa = s->data<float>();
    za = z->data<int32_t>();
  } else {
    float* row_scale = thread_scratch_as<float>(Scratch::RowScales, m);
    int32_t* row_zero = thread_scratch_as<int32_t>(Scratch::RowZeros, m);
    if (!state.fused() && a_type != DType::UInt8) {
      if (!run_row_blocks(ctx, state, a.raw(), a_type, nullptr, nullptr, row_scale, row_zero, residual, m, out_shape))
        run_reference(ctx, state);
      return;
    }
    sa = row_scale;
    za = row_zero;
    qa = quantize_a(ctx, state, a, a_type, m, k, row_scale, row_zero);
  }

  if (state.fused()) {
    auto entry = state.fused_primitive(m, ctx.threads());
    if (!entry) return run_reference(ctx, state);
    if (!state.per_row_y()) {
      Tensor& y = ctx.allocate_output_uninitialized(0, state.output_dtype(), out_shape);
      state.run_fused(ctx, *entry, qa, m, residual, y.mutable_raw());
      return;
    }
    // Per-row Y from the fused primitive: its float rows (the bits a float output would
    // have), then each row quantized as the reader would.
    float* rows = thread_scratch_as<float>(Scratch::Sums, m * n);
    state.run_fused(ctx, *entry, qa, m, residual, rows);
    const QMatMulState::Output out = allocate_outputs(ctx, state, out_shape);
    cpu::parallel_ranges(ctx, m, m * n,
                         [&](int64_t begin, int64_t end) { state.quantize_output_rows(rows, begin, end, out); });
    return;
  }
  if (!run_row_blocks(ctx, state, qa, DType::UInt8, sa, za, nullptr, nullptr, residual, m, out_shape))
    run_reference(ctx, state);
}

bool prepare_qmatmul(const Node& node, std::unique_ptr<KernelState>& state) {
  try {
    std::unique_ptr<QMatMulState> s = QMatMulState::create(node);
    if (!s) return false;
    state = std::move(s);
    return true;
  } catch (const dnnl::error&) {
    return false;  // oneDNN could not even pack B: the reference kernel takes the node
  }
}

}  // namespace

void register_qmatmul(KernelRegistry& r) { r.add("octet", "QMatMul", KernelDef{qmatmul_kernel, prepare_qmatmul}); }

}  // namespace octet::dnnl_cpu
