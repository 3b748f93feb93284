// com.microsoft.MatMulNBits on the CPU, float32 A, 4- or 8-bit B in the op's own packing
// (see the reference kernel in ref_quant_matmul.cpp for the semantics).
//
// Two paths, both threaded over N:
//   - decode (A has at most kNbitsMaxRows rows): memory-bound, each weight byte read once.
//     Where AVX512-VNNI is present (and matmul_nbits.h's mode allows), integer dot products
//     on weights repacked into 16-column panels at session creation (simd/nbits_packed.h):
//     int8 A for 4-bit weights, 16-bit A (two bytes, "split") for 8-bit ones, quantized per
//     32 elements per call.
//     Else the float GEMV on the file's layout: weights dequantized in registers, zero point
//     included, the block scale once per block (simd/nbits_gemv_*.cpp).
//   - prefill (more rows): compute-bound. Each thread dequantizes a panel of columns
//     (simd/nbits_dequant_*.cpp) into a per-thread buffer and multiplies it with oneDNN's
//     sgemm; the float weights never exist whole, A stays float32.
// Memory: where the integer GEMV runs, the panels are the only copy the kernel keeps (the
// prefill dequantizes from them, and so does a float GEMV asked for after the session was
// made); the state owns B, scales and zero points (KernelState::owns_input), so a session
// that owns its graph drops the file's copy and the weights live once. SmolLM2 with past,
// `octet generate`, 128 + 128 tokens: peak RSS int8 556 -> 366 MB, int4 416 -> 290 MB
// (with the session returning freed heap as it goes and fuse_blocked_dq_matmul dropping
// the DequantizeLinear weights it replaces).
// The node is declined (reference kernel) unless B, scales and zero points are constants,
// A is float32, bits is 4 or 8, block_size a multiple of 32 and zero points packed uint8.
// octet.MatMulNBits (ops/octet_ops.cpp) runs here too: the same product, then its residual
// (input 6) added to Y, as the Add it replaced (fuse_matmul_epilogue) did, or Y's columns
// written into its `split` outputs: the packed decode GEMV stores each 16-column panel
// straight into the output holding it (parts starting at multiples of 16, as q/k/v's
// 576/192/192 do); elsewhere Y is computed whole and copied into the parts.
#include <dnnl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/sizes.h"
#include "kernels/cpu/cpu_data_movement.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/matmul_nbits.h"
#include "kernels/cpu/dnnl_common.h"
#include "kernels/cpu/simd/nbits_packed.h"
#include "kernels/cpu/simd/nbits_table.h"
#include "kernels/cpu/simd_kernels.h"
#include "kernels/cpu/thread_scratch.h"
#include "kernels/cpu/work_sharing.h"
#include "kernels/dispatch/cpu_features.h"

namespace octet::cpu {

const NbitsTable& nbits_table(IsaLevel level) {
  static const std::array<NbitsTable, 3> tables = [] {
    NbitsTable generic;
    fill_nbits_table_generic(generic);
    fill_nbits_dequant_generic(generic);
    NbitsTable avx2 = generic, avx512 = generic;
    if (detected_isa() >= IsaLevel::Avx2) fill_nbits_table_avx2(avx2), fill_nbits_dequant_avx2(avx2), avx512 = avx2;
    if (detected_isa() >= IsaLevel::Avx512) fill_nbits_table_avx512(avx512), fill_nbits_dequant_avx512(avx512);
    return std::array<NbitsTable, 3>{generic, avx2, avx512};
  }();
  return tables[static_cast<size_t>(std::min(level, detected_isa()))];
}

namespace {

// The integer GEMV on packed panels: the CPU's (null members without AVX512-VNNI).
const NbitsPackedKernels& packed_kernels() {
  static const NbitsPackedKernels k =
      detected_isa() >= IsaLevel::Avx512 ? nbits_packed_kernels_vnni() : NbitsPackedKernels{};
  return k;
}

}  // namespace

namespace {

NbitsActivations activations_from_environment() {
  const char* env = std::getenv("OCTET_NBITS_ACTIVATIONS");
  if (!env) return NbitsActivations::Auto;
  const std::string v = env;
  if (v == "auto") return NbitsActivations::Auto;
  if (v == "float") return NbitsActivations::Float;
  if (v == "int8") return NbitsActivations::Int8;
  fail("OCTET_NBITS_ACTIVATIONS='", v, "' is not one of auto, float, int8");
}

std::atomic<NbitsActivations>& activations_mode() {
  static std::atomic<NbitsActivations> mode{activations_from_environment()};
  return mode;
}

}  // namespace

void set_nbits_activations(NbitsActivations mode) { activations_mode().store(mode, std::memory_order_relaxed); }
NbitsActivations nbits_activations() { return activations_mode().load(std::memory_order_relaxed); }
bool nbits_int8_path_available() { return active_isa() >= IsaLevel::Avx512 && packed_kernels().gemv != nullptr; }
NbitsDecodePath nbits_decode_path(int bits) {
  const NbitsActivations mode = nbits_activations();
  if (mode == NbitsActivations::Float || !nbits_int8_path_available()) return NbitsDecodePath::Float;
  return mode == NbitsActivations::Int8 || bits == 4 ? NbitsDecodePath::Int8 : NbitsDecodePath::Int16;
}
bool nbits_int8_path_active(int bits) { return nbits_decode_path(bits) == NbitsDecodePath::Int8; }

namespace {

// Columns a thread dequantizes at once on the prefill path. Each sgemm call packs its A
// (M x K) again, so wider panels spend less on that; 256 columns of K = 1536 floats (1.5
// MiB) measured no slower than 64-128 and up to ~1.3x faster on SmolLM2's shapes (M = 128).
constexpr int64_t kMaxPanel = 256;

// Either the file's layout (b, scales, zeros, zero_scales) or the panels (packed), never
// both: see "Memory" above.
struct NbitsState : KernelState {
  int bits = 4;
  int64_t K = 0, N = 0, block = 0, k_blocks = 0;
  bool zero_points = false;         // the node has input 3
  std::shared_ptr<const Tensor> b;  // uint8 [N, k_blocks, block * bits / 8], as in the file
  std::vector<float> scales;        // [N, k_blocks]
  std::vector<float> zeros;         // [N, k_blocks]: zero points as floats
  std::vector<float> zero_scales;   // [N, k_blocks]: zero point * scale (the prefill path)
  std::vector<float> bias;          // [N] or empty
  std::unique_ptr<NbitsPacked> packed;  // the integer GEMV's panels, where the CPU runs it
  std::vector<int64_t> split;           // octet.MatMulNBits' output parts, or empty

  bool owns_input(size_t i) const override { return packed && i >= 1 && i <= 3; }
};

const Value* constant_value(const Node& node, size_t i) {
  const Value* v = node.input(i);
  return v && v->constant() && !v->is_graph_input() ? v : nullptr;
}

bool prepare_nbits(const Node& node, std::unique_ptr<KernelState>& out) {
  const Value* a = node.input(0);
  const size_t max_inputs = node.domain() == "octet" ? 7 : 6;  // octet's: + the residual
  if (!a || a->type.dtype != DType::Float32 || node.inputs().size() > max_inputs) return false;
  if (node.input(4)) return false;  // g_idx: the reference kernel explains
  auto s = std::make_unique<NbitsState>();
  s->K = node.attr_int("K", 0), s->N = node.attr_int("N", 0), s->block = node.attr_int("block_size", 0);
  s->bits = static_cast<int>(node.attr_int("bits", 4));
  if (s->K <= 0 || s->N <= 0 || s->block <= 0 || s->block % 32 || (s->bits != 4 && s->bits != 8)) return false;
  s->k_blocks = (s->K + s->block - 1) / s->block;
  // Attributes from the file: products that would overflow are declined (the reference
  // kernel's checks then name the node), never wrapped into a size that happens to match.
  if (!try_numel({s->N, s->k_blocks, s->block}) || !try_numel({kNbitsMaxRows, s->k_blocks, s->block})) return false;
  const int64_t blob = s->block * s->bits / 8, count = s->N * s->k_blocks;
  const Value* vb = constant_value(node, 1);
  const Value* vs = constant_value(node, 2);
  if (!vb || !vs || vb->constant()->dtype() != DType::UInt8 || vb->constant()->numel() != count * blob) return false;
  if (vs->constant()->dtype() != DType::Float32 || vs->constant()->numel() != count) return false;
  const int64_t zp_row = (s->k_blocks * s->bits + 7) / 8;
  const uint8_t* zp = nullptr;
  if (node.input(3)) {
    const Value* vz = constant_value(node, 3);
    if (!vz || vz->constant()->dtype() != DType::UInt8 || vz->constant()->numel() != s->N * zp_row) return false;
    zp = vz->constant()->raw();
  }
  if (node.input(5)) {
    const Value* vbias = constant_value(node, 5);
    if (!vbias || vbias->constant()->dtype() != DType::Float32 || vbias->constant()->numel() != s->N) return false;
    const float* p = vbias->constant()->data<float>();
    s->bias.assign(p, p + s->N);
  }
  s->zero_points = zp != nullptr;
  if (node.domain() == "octet") {
    s->split = node.attr_ints("split", {});
    int64_t total = 0;
    for (int64_t part : s->split) total += part > 0 ? part : s->N + 1;
    if (!s->split.empty() && (total != s->N || s->split.size() != node.outputs().size())) return false;
  }
  const float* ps = vs->constant()->data<float>();
  const int mask = (1 << s->bits) - 1;
  std::vector<uint8_t> zero_codes(static_cast<size_t>(count));
  for (int64_t n = 0; n < s->N; ++n)
    for (int64_t kb = 0; kb < s->k_blocks; ++kb) {
      const int64_t bit = kb * s->bits;
      zero_codes[n * s->k_blocks + kb] =
          static_cast<uint8_t>(zp ? (zp[n * zp_row + bit / 8] >> (bit % 8)) & mask : 1 << (s->bits - 1));
    }
  // The integer GEMV where it runs at this session's ISA level and mode: the panels only.
  // A session made with float activations asked for keeps the file's layout for the float
  // GEMV, with the zero points and zero * scale as floats.
  if (nbits_int8_path_available() && nbits_activations() != NbitsActivations::Float) {
    s->packed = std::make_unique<NbitsPacked>(
        pack_nbits(s->bits, s->N, s->k_blocks, s->block, vb->constant()->raw(), ps, zero_codes.data()));
  } else {
    s->b = vb->constant();
    s->scales.assign(ps, ps + count);
    s->zeros.assign(zero_codes.begin(), zero_codes.end());
    s->zero_scales.resize(static_cast<size_t>(count));
    for (int64_t c = 0; c < count; ++c) s->zero_scales[c] = s->zeros[c] * s->scales[c];
  }
  out = std::move(s);
  return true;
}

// The decode GEMVs share their columns out in chunks of about this many weight bytes:
// small enough that the caller seldom waits long on a helper's last chunk, big enough to
// pay for claiming one (an atomic on a cache line both cores write).
constexpr int64_t kShareBytes = 32 * 1024;

// A GEMV with fewer weight bytes than this runs on its caller alone: below two kShareBytes
// units there is nothing to hand out. History: with one claim per 32 KB unit and a helper
// that slept after 20 us idle, sharing SmolLM2's per-layer GEMVs (0.17-1.8 MB) gained
// nothing, even quiet (a sleeping helper in a VM arrives after its caller did the GEMV
// alone), so the bound was 2 MB (only the LM head shared). With guided claims and a helper
// that polls, yielding, through a decode step's gaps (work_sharing.cpp), every GEMV gains:
// bench-decode, 2 threads, the decode step's MatMulNBits time (profiled, under chrt -r 1 on
// the shared 2-core EPYC) int8 2.2-2.5 ms at 0 or 64 KB against 2.2-2.9 ms at 256 KB and
// 3.6 ms at 2 MB; int4 1.32-1.41 ms against 1.43-1.47 and 2.2
// (bench/results/2026-11-26_decode-bandwidth_session14_epyc-2core.md). The environment
// variable OCTET_SHARE_MIN_BYTES overrides the bound (read once), to tune it without rebuilding.
constexpr int64_t kShareMinBytes = 2 * kShareBytes;

int64_t share_min_bytes() {
  static const int64_t bytes = [] {
    const char* env = std::getenv("OCTET_SHARE_MIN_BYTES");
    if (!env || !*env) return kShareMinBytes;
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    return *end == '\0' && v >= 0 ? static_cast<int64_t>(v) : kShareMinBytes;
  }();
  return bytes;
}

int share_threads(const KernelContext& ctx, int64_t weight_bytes) {
  return weight_bytes < share_min_bytes() ? 1 : ctx.threads();
}

// The float decode GEMV: columns in groups of 8 (whole cache lines of y), chunks of about
// kShareBytes of weights over the threads (share_work), each chunk's columns computed by
// `columns(n0, n1)` and then given the bias.
template <typename Columns>
void gemv_columns(const KernelContext& ctx, const NbitsState& s, int64_t rows, int64_t kp, float* y,
                  const Columns& columns) {
  const int64_t groups = (s.N + 7) / 8, group_bytes = 8 * kp * s.bits / 8;
  auto run = [&](int64_t begin, int64_t end) {
    const int64_t n0 = begin * 8, n1 = std::min(s.N, end * 8);
    columns(n0, n1);
    if (!s.bias.empty())
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t n = n0; n < n1; ++n) y[r * s.N + n] += s.bias[n];
  };
  share_work(share_threads(ctx, groups * group_bytes), groups, (kShareBytes + group_bytes - 1) / group_bytes, run);
}

// Columns [n0, n1) of Y, stored at y[r * (n1 - n0) + n - n0]: the whole of Y, or one
// output of a split octet.MatMulNBits.
struct YPart {
  float* y;
  int64_t n0, n1;
};

// Decode with integer activations (matmul_nbits.h): A quantized per run of 32 elements
// (O(rows * K), against the GEMV's O(rows * K * N)), then the packed GEMV, panels over the
// threads through share_work (work_sharing.h: no fork/join to wait on). qmax 127 (int8 codes)
// or kNbitsSplitQmax (16-bit ones); 8-bit weights read split codes either way.
void run_gemv_packed(const KernelContext& ctx, const NbitsState& s, int qmax, const float* a, int64_t rows,
                     const YPart* parts, size_t part_count) {
  const NbitsPackedKernels& kernels = packed_kernels();
  const NbitsPacked& w = *s.packed;
  const int64_t kp = s.k_blocks * s.block, runs = kp / 32;
  NbitsQuantizeArgs q;
  q.a = a, q.rows = rows, q.K = s.K, q.lda = s.K, q.k_blocks = s.k_blocks, q.block = s.block;
  q.qmax = qmax, q.split = s.bits == 8;
  q.aq = thread_scratch_as<int8_t>(Scratch::NbitsA, rows * kp * (q.split ? 2 : 1));
  q.a_scales = thread_scratch_as<float>(Scratch::NbitsAScales, rows * runs);
  q.a_zero = thread_scratch_as<int32_t>(Scratch::NbitsAZero, 2 * rows * runs);
  q.a_sum = q.a_zero + rows * runs;
  kernels.quantize(q);
  NbitsPackedArgs g;
  g.w = &w, g.rows = rows, g.a = q.aq, g.a_scales = q.a_scales, g.a_sum = q.a_sum, g.a_zero = q.a_zero;
  // Each part's panels store into its own output (parts start at panel boundaries).
  auto panels = [&](int64_t begin, int64_t end) {
    for (size_t i = 0; i < part_count; ++i) {
      const YPart& part = parts[i];
      const int64_t p0 = std::max(begin, part.n0 / kNbitsPanel);
      const int64_t p1 = std::min(end, (part.n1 + kNbitsPanel - 1) / kNbitsPanel);
      if (p0 >= p1) continue;
      NbitsPackedArgs gp = g;
      gp.y = part.y, gp.ldy = part.n1 - part.n0, gp.col0 = part.n0;
      kernels.gemv(gp, p0, p1);
      const int64_t n0 = std::max(part.n0, p0 * kNbitsPanel), n1 = std::min(part.n1, p1 * kNbitsPanel);
      if (!s.bias.empty())
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t n = n0; n < n1; ++n) part.y[r * gp.ldy + n - part.n0] += s.bias[n];
    }
  };
  const int64_t panel_bytes = s.k_blocks * w.block_bytes;
  share_work(share_threads(ctx, w.panels * panel_bytes), w.panels, (kShareBytes + panel_bytes - 1) / panel_bytes,
             panels);
}

// Decode: A's rows arranged as nbits_table.h wants, then the GEMV and the bias.
void run_gemm(const KernelContext& ctx, const NbitsState& s, const float* a, int64_t rows, float* y);

void run_gemv(const KernelContext& ctx, const NbitsState& s, const float* a, int64_t rows, float* y) {
  const NbitsTable& table = nbits_table(active_isa());
  const NbitsDecodePath path = nbits_decode_path(s.bits);
  if (path != NbitsDecodePath::Float && s.packed) {
    const YPart whole{y, 0, s.N};
    return run_gemv_packed(ctx, s, path == NbitsDecodePath::Int16 ? kNbitsSplitQmax : 127, a, rows, &whole, 1);
  }
  // Float activations asked for after the session kept only the panels: dequantized panels
  // and sgemm, as the prefill.
  if (!s.b) return run_gemm(ctx, s, a, rows, y);
  const int64_t kp = s.k_blocks * s.block;
  float* arranged = thread_scratch_as<float>(Scratch::NbitsA, rows * kp);
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = a + r * s.K;
    float* dst = arranged + r * kp;
    for (int64_t c = 0; c < kp; c += 32) {
      float run[32];
      for (int j = 0; j < 32; ++j) run[j] = c + j < s.K ? src[c + j] : 0.0f;
      if (s.bits == 4)
        for (int j = 0; j < 16; ++j) dst[c + j] = run[2 * j], dst[c + 16 + j] = run[2 * j + 1];
      else
        std::memcpy(dst + c, run, sizeof run);
    }
  }
  NbitsGemvArgs g;
  g.bits = s.bits, g.rows = rows, g.k_blocks = s.k_blocks, g.block = s.block;
  g.b = s.b->raw(), g.scales = s.scales.data(), g.zeros = s.zeros.data(), g.a = arranged, g.y = y, g.ldy = s.N;
  gemv_columns(ctx, s, rows, kp, y, [&](int64_t n0, int64_t n1) { table.gemv(g, n0, n1); });
}

// Prefill from the panel layout: per thread, [K, panel] floats dequantized 16 columns at a
// time (simd/nbits_dequant_packed_*.cpp), then sgemm with B as it is (not transposed).
void run_gemm_packed(const KernelContext& ctx, const NbitsState& s, const float* a, int64_t rows, float* y,
                     int64_t panel, int64_t panels) {
  const NbitsPackedDequantFn dequant = active_isa() >= IsaLevel::Avx512 && packed_kernels().dequant
                                           ? packed_kernels().dequant
                                           : dequant_packed_panel_generic;
  parallel_ranges(ctx, panels, rows * s.N * s.K, [&](int64_t begin, int64_t end) {
    float* w = thread_scratch_as<float>(Scratch::NbitsPanel, panel * s.K);
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n0 = p * panel, cols = std::min(panel, s.N - n0);
      for (int64_t c = 0; c < cols; c += kNbitsPanel) dequant(*s.packed, (n0 + c) / kNbitsPanel, s.K, w + c, panel);
      const dnnl_status_t st = dnnl_sgemm('N', 'N', rows, cols, s.K, 1.0f, a, s.K, w, panel, 0.0f, y + n0, s.N);
      OCTET_ASSERT(st == dnnl_success, "dnnl_sgemm failed for MatMulNBits panel");
      if (!s.bias.empty())
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c) y[r * s.N + n0 + c] += s.bias[n0 + c];
    }
  });
}

// Prefill: per thread, panels of columns dequantized to float [cols, K] (the ISA's
// vector dequantization), then sgemm.
void run_gemm(const KernelContext& ctx, const NbitsState& s, const float* a, int64_t rows, float* y) {
  // Panels of up to kMaxPanel columns, but at least one per thread: N = 192 (SmolLM2's k/v
  // projections) in one panel would leave a thread idle. A multiple of the 16-column
  // packed panel.
  const int64_t per_thread = (s.N + ctx.threads() - 1) / ctx.threads();
  const int64_t panel = std::clamp<int64_t>((per_thread + 15) / 16 * 16, 16, kMaxPanel);
  const int64_t panels = (s.N + panel - 1) / panel;
  if (s.packed) return run_gemm_packed(ctx, s, a, rows, y, panel, panels);
  const NbitsTable& table = nbits_table(active_isa());
  NbitsDequantArgs d;
  d.bits = s.bits, d.K = s.K, d.k_blocks = s.k_blocks, d.block = s.block;
  d.b = s.b->raw(), d.scales = s.scales.data(), d.zero_scales = s.zero_scales.data();
  parallel_ranges(ctx, panels, rows * s.N * s.K, [&](int64_t begin, int64_t end) {
    float* w = thread_scratch_as<float>(Scratch::NbitsPanel, panel * s.K);  // dequant writes K per column
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n0 = p * panel, cols = std::min(panel, s.N - n0);
      for (int64_t c = 0; c < cols; ++c) table.dequant(d, n0 + c, w + c * s.K);
      const dnnl_status_t st = dnnl_sgemm('N', 'T', rows, cols, s.K, 1.0f, a, s.K, w, s.K, 0.0f, y + n0, s.N);
      OCTET_ASSERT(st == dnnl_success, "dnnl_sgemm failed for MatMulNBits panel");
      if (!s.bias.empty())
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c) y[r * s.N + n0 + c] += s.bias[n0 + c];
    }
  });
}

// The reference kernel on the node, given the weights back in the file's layout when the
// state kept only the panels (the graph's copy may be gone: owns_input).
void run_reference(KernelContext& ctx, const NbitsState& s) {
  if (!s.packed) return dnnl_cpu::run_reference_kernel(ctx);
  const NbitsUnpacked u = unpack_nbits(*s.packed);
  const int64_t blob = s.block * s.bits / 8, zp_row = (s.k_blocks * s.bits + 7) / 8;
  Tensor b(DType::UInt8, {s.N, s.k_blocks, blob}), scales(DType::Float32, {s.N, s.k_blocks}),
      zeros(DType::UInt8, {s.N, zp_row});
  std::memcpy(b.mutable_raw(), u.b.data(), u.b.size());
  std::memcpy(scales.mutable_raw(), u.scales.data(), u.scales.size() * sizeof(float));
  std::memset(zeros.mutable_raw(), 0, static_cast<size_t>(zeros.numel()));
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t kb = 0; kb < s.k_blocks; ++kb) {
      const int64_t bit = kb * s.bits;
      zeros.mutable_raw()[n * zp_row + bit / 8] |= static_cast<uint8_t>(u.zeros[n * s.k_blocks + kb] << (bit % 8));
    }
  std::vector<const Tensor*> given;
  for (size_t i = 1; i <= 3; ++i) given.push_back(ctx.optional_input(i));
  ctx.set_input(1, &b), ctx.set_input(2, &scales);
  if (s.zero_points) ctx.set_input(3, &zeros);
  auto restore = [&] {
    for (size_t i = 1; i <= 3; ++i) ctx.set_input(i, given[i - 1]);
  };
  try {
    dnnl_cpu::run_reference_kernel(ctx);
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

// A split octet.MatMulNBits: its parts written by the packed decode GEMV directly where
// they start at panel boundaries, else Y computed whole and its columns copied out.
// (No heap allocation for up to 8 parts beyond the outputs: it runs 30 times a decode step.)
void run_split(KernelContext& ctx, const NbitsState& s, const float* a, int64_t rows, std::vector<int64_t> shape) {
  std::array<YPart, 8> few;
  std::vector<YPart> many(s.split.size() > few.size() ? s.split.size() : 0);
  YPart* parts = many.empty() ? few.data() : many.data();
  const size_t count = s.split.size();
  bool aligned = true;
  int64_t n0 = 0;
  for (size_t i = 0; i < count; ++i) {
    shape.back() = s.split[i];
    Tensor& out = ctx.allocate_output_uninitialized(i, DType::Float32, shape);
    parts[i] = {out.mutable_data<float>(), n0, n0 + s.split[i]};
    aligned = aligned && n0 % kNbitsPanel == 0;
    n0 += s.split[i];
  }
  if (rows == 0) return;
  const NbitsDecodePath path = nbits_decode_path(s.bits);
  if (rows <= kNbitsMaxRows && aligned && path != NbitsDecodePath::Float && s.packed)
    return run_gemv_packed(ctx, s, path == NbitsDecodePath::Int16 ? kNbitsSplitQmax : 127, a, rows, parts, count);
  std::vector<float> y(static_cast<size_t>(rows * s.N));
  if (rows <= kNbitsMaxRows) run_gemv(ctx, s, a, rows, y.data());
  else run_gemm(ctx, s, a, rows, y.data());
  for (size_t i = 0; i < count; ++i)
    copy_columns(ctx, y.data(), rows, s.N, parts[i].n0, parts[i].n1 - parts[i].n0, parts[i].y);
}

void matmul_nbits_kernel(KernelContext& ctx) {
  const auto& s = ctx.state_as<NbitsState>();
  const Tensor& a = ctx.input(0);
  if (a.dtype() != DType::Float32 || a.rank() < 1 || a.shape().back() != s.K)
    return run_reference(ctx, s);  // its error names what is wrong
  std::vector<int64_t> out_shape = a.shape();
  out_shape.back() = s.N;
  // octet.MatMulNBits' residual: Y's exact shape (what the fusion writes), else the
  // reference kernel broadcasts or explains.
  const Tensor* residual = ctx.optional_input(6);
  if (residual && (residual->dtype() != DType::Float32 || residual->shape() != out_shape))
    return run_reference(ctx, s);
  const int64_t rows = a.numel() / s.K;
  if (!s.split.empty()) return run_split(ctx, s, a.data<float>(), rows, out_shape);
  Tensor& y = ctx.allocate_output_uninitialized(0, DType::Float32, out_shape);
  if (rows == 0) return;
  float* py = y.mutable_data<float>();
  if (rows <= kNbitsMaxRows) run_gemv(ctx, s, a.data<float>(), rows, py);
  else run_gemm(ctx, s, a.data<float>(), rows, py);
  // After the bias, one float add per element: Add(Y, residual) bit for bit.
  if (residual) {
    const float* pr = residual->data<float>();
    const int64_t count = rows * s.N;
    for (int64_t i = 0; i < count; ++i) py[i] += pr[i];
  }
}

}  // namespace

void register_matmul_nbits(KernelRegistry& r) {
  r.add("com.microsoft", "MatMulNBits", KernelDef{matmul_nbits_kernel, prepare_nbits});
  r.add("octet", "MatMulNBits", KernelDef{matmul_nbits_kernel, prepare_nbits});
}

}  // namespace octet::cpu
