// float32 MatMul, Gemm and octet.MatMulBias through oneDNN's matmul primitive.
//
// Shapes, per run:
// - B 2-D (the Linear layer): A of any rank >= 1 is flattened to [M, K], M the product
//   of its leading dims, and one 2-D GEMM runs; the output is A's leading dims + [N].
// - B of rank != 2 (attention's [B,H,S,D] x [B,H,D,S]): both operands are padded to one
//   rank and oneDNN runs the batch, broadcasting size-1 batch dims as numpy does.
// - Gemm: 2-D A and B, transposes expressed as strides (no copies), alpha as oneDNN's
//   output scale, C as the bias when alpha = beta = 1 and C is one row, otherwise as an
//   added tensor (binary post-op) scaled by beta (see MatMulState::attributes).
// - octet.MatMulBias: the bias (when present) is oneDNN's bias, `activation` an eltwise
//   post-op (GeLU erf/tanh) and `residual` a binary add post-op after it; `split` writes
//   Y's columns as several outputs (the decode GEMV stores each panel in its part; oneDNN
//   writes a whole Y that is then copied out).
//
// A constant B (an initializer that is not an overridable graph input) is reordered once,
// at session creation, into the layout oneDNN prefers for it. The state then owns B
// (owns_input(1)): runs take B's shape from the state and never read the graph's copy,
// which the session may drop; a shape that wants plain B, or the reference kernel, gets a
// temporary copy unpacked from the packed one. Primitives are created per shape (M, batch dims, added tensors' shapes,
// threads) on first use and cached in the node's state behind a mutex, so a run never
// pays for creation twice and any number of threads may run one node.
//
// Decode: A of at most 4 rows against a constant B that oneDNN packed as 64-column panels
// runs the AVX-512 GEMV of dnnl_matmul_gemv.cpp on that same packed copy instead of
// oneDNN's matmul (memory-bound; no OpenMP fork/join), epilogue included.
//
// Past those few rows, a constant B in those panels runs octet's panel GEMM
// (dnnl_matmul_panel_gemm.cpp), which prefetches the weights it reads next: in a model
// they are cold, and oneDNN's matmul waits for them.
//
// Whatever oneDNN cannot express or would only run with its slow reference implementation
// (an unusual broadcast, empty tensors, a residual broadcast over batch dims), and any
// invalid input, goes to the reference kernel of the same op: same results, same errors.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/dnnl_common.h"
#include "kernels/kernel.h"

namespace octet::dnnl_cpu {

enum class Activation { None, GeluErf, GeluTanh };

// What a node asks for; fixed at session creation.
struct MatMulSpec {
  bool gemm = false;  // ONNX Gemm semantics (2-D operands, flags below, C)
  bool trans_a = false, trans_b = false;
  float alpha = 1.0f, beta = 1.0f;
  int bias_input = -1;      // octet.MatMulBias: 1-D [N] bias
  int residual_input = -1;  // octet.MatMulBias: added after the activation
  int c_input = -1;         // Gemm: C, broadcast to [M, N]
  Activation activation = Activation::None;
  // octet.MatMulBias `split`: Y's columns written as these parts, one output each (empty: one Y).
  std::vector<int64_t> split;
};

// One product as oneDNN sees it: descriptors' dims of equal rank, and the ONNX output shape.
struct MatMulProblem {
  dnnl::memory::dims src, src_strides;  // strides empty: row-major
  dnnl::memory::dims wei, wei_strides;
  dnnl::memory::dims dst;
  dnnl::memory::dims bias;    // empty: no bias
  dnnl::memory::dims addend;  // empty: nothing added after the activation
  int bias_from = -1, addend_from = -1;  // the inputs of the node they read
  float addend_scale = 1.0f;  // Gemm's beta
  std::vector<int64_t> out_shape;
};

class MatMulState : public KernelState {
 public:
  // Prepacks B when it is a 2-D float32 constant. Throws dnnl::error on oneDNN failures.
  MatMulState(const Node& node, MatMulSpec spec);

  const MatMulSpec& spec() const { return spec_; }
  // True when B was reordered into a blocked layout at session creation.
  bool prepacked() const { return static_cast<bool>(packed_); }
  // B (input 1) when it is prepacked: runs never read the graph's copy.
  bool owns_input(size_t i) const override { return i == 1 && prepacked(); }
  // The graph's B shape, when prepacked.
  const std::vector<int64_t>& packed_b_shape() const { return b_shape_; }
  // A plain copy of B in the graph's layout and shape, unpacked from the prepacked one.
  Tensor unpack_b() const;
  // [K, N] of the prepacked B.
  const dnnl::memory::dims& packed_dims() const { return packed_dims_; }
  // The prepacked B as f32_gemv.h's panels, when oneDNN chose that layout; else null.
  const float* gemv_panels() const {
    return gemv_k_stride_ > 0 ? static_cast<const float*>(packed_->get_data_handle()) : nullptr;
  }
  int64_t gemv_k_stride() const { return gemv_k_stride_; }
  // Primitives created so far (one per distinct shape key); for tests and reports.
  int64_t primitives_created() const { return cache_.created(); }
  // Runs that went to the reference kernel (shapes oneDNN does not take).
  int64_t reference_runs() const { return reference_runs_.load(); }
  // The oneDNN implementations the cached primitives use, for tests and reports.
  std::vector<std::string> implementations() const;

  // A created primitive for one shape key, shared by every run with that key.
  using Entry = MatMulPrimitive;
  // The cached primitive for `problem` at `threads`, created on first use; nullptr when
  // oneDNN offers no usable one (the caller then runs the reference kernel).
  std::shared_ptr<const Entry> primitive_for(const MatMulProblem& problem, int threads) const;
  // Runs `entry` on the inputs of `ctx`, writing `out` (allocated with problem.out_shape).
  void execute(const KernelContext& ctx, const MatMulProblem& problem, const Entry& entry, Tensor& out) const;
  void count_reference_run() const { ++reference_runs_; }
  // Runs that took the panel GEMM (dnnl_matmul_panel_gemm.cpp); for tests.
  int64_t panel_gemm_runs() const { return panel_gemm_runs_.load(); }
  void count_panel_gemm_run() const { ++panel_gemm_runs_; }

 private:
  std::shared_ptr<const Entry> create(const MatMulProblem& p) const;
  dnnl::primitive_attr attributes(const MatMulProblem& p) const;
  bool own_gelu(const MatMulProblem& p) const;

  MatMulSpec spec_;
  // B in oneDNN's preferred layout, for the [K, N] it was packed for; null when B is not
  // a 2-D constant or oneDNN prefers the plain layout anyway (then the graph's B is used).
  std::optional<dnnl::memory> packed_;
  std::shared_ptr<Buffer> packed_pages_;  // packed_'s memory when B is big (huge pages); else oneDNN's
  dnnl::memory::dims packed_dims_;
  int64_t gemv_k_stride_ = 0;  // > 0: packed_ is f32_gemv.h's panels of this many rows
  std::vector<int64_t> b_shape_;  // B as the graph stores it ([N, K] under transB)

  PrimitiveCache<Entry> cache_;
  mutable std::atomic<int64_t> panel_gemm_runs_{0};
  mutable std::atomic<int64_t> reference_runs_{0};
};

// Whether octet's own kernels on the packed panels can run `p` (dnnl_matmul_gemv.cpp): B
// packed as the GEMV's panels and AVX-512 active, a 2-D row-major A, alpha 1, a bias row
// and a residual of one row or of Y's shape (added unscaled); the row count is theirs to check.
bool packed_product_fits(const MatMulState& s, const MatMulProblem& p);

// The float32 decode GEMV (dnnl_matmul_gemv.cpp). gemv_panel_rows: K_pad when `md` is a
// layout f32_gemv.h reads (64-column panels of contiguous rows), else 0. gemv_applies:
// whether `p` runs there (packed_product_fits, at most kF32GemvMaxRows rows of A);
// run_gemv writes Y's columns into `parts` (the outputs, allocated by the caller).
int64_t gemv_panel_rows(const dnnl::memory::desc& md);
// Whether gemv_applies() may say yes: on unless OCTET_F32_GEMV=0 (read once); the setter
// is for A/B benchmarks (oneDNN against the GEMV in one process) and takes effect on the
// next run.
void set_f32_gemv_enabled(bool on);
bool f32_gemv_enabled();
bool gemv_applies(const MatMulState& s, const MatMulProblem& p);
// The columns [col0, col0 + width) of Y, row-major [rows, width] at y: the whole Y, or one
// part of octet.MatMulBias' `split`. Sorted by col0, covering Y's columns.
struct GemvPart {
  float* y = nullptr;
  int64_t col0 = 0, width = 0;
};
void run_gemv(const KernelContext& ctx, const MatMulState& s, const MatMulProblem& p, const std::vector<GemvPart>& parts);

// The float32 panel GEMM (dnnl_matmul_panel_gemm.cpp). panel_gemm_applies: whether `p`
// runs there (packed_product_fits, more rows than the GEMV takes, `split` parts starting on
// panel boundaries); run_panel_gemm
// writes Y's columns into `parts` as run_gemv does. The switch (OCTET_F32_PANEL_GEMM=0
// turns it off, read once; the setter is for A/B tests and benchmarks) takes effect on the
// next run.
void set_f32_panel_gemm_enabled(bool on);
bool f32_panel_gemm_enabled();
bool panel_gemm_applies(const MatMulState& s, const MatMulProblem& p);
void run_panel_gemm(const KernelContext& ctx, const MatMulState& s, const MatMulProblem& p,
                    const std::vector<GemvPart>& parts);

// Registers ai.onnx MatMul and Gemm and octet.MatMulBias.
void register_matmul(KernelRegistry& r);

}  // namespace octet::dnnl_cpu
