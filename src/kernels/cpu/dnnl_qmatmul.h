// octet.QMatMul (docs/quantization.md §2) on oneDNN's int8 matmul.
//
// At session creation (QMatMulState): B, b_scale, b_zero_point, bias and (static) a_scale,
// a_zero_point must be constants, and b_zero_point zero; anything else stays with the
// reference kernel. B goes into an Int8Gemm (packed once, column sums), so the state owns
// it (owns_input(3)): runs never read the graph's copy.
//
// Each run quantizes A in one vectorized pass into a uint8 scratch [M, K] (an int8
// activation is shifted by +128, see dnnl_int8_gemm.h), per row in dynamic mode (the
// row's range, parameters and quantization while it is in cache); a uint8 A that
// octet.LayerNormQuantize already quantized goes to the product as it is (int8: shifted
// by +128 into the scratch); a uint8 A quantized per row (int32 a_zero_point) comes with
// its rows' a_scale / a_zero_point tensors and takes the dynamic path below, then:
// - static, where oneDNN's int8 product is exact: one fused primitive. oneDNN 2.6 adds the
//   bias before the output scales (dst = scale * (acc + bias), measured on brgemm VNNI
//   and AMX and on gemm:jit), so the bias it gets is in accumulator units and folds the
//   activation zero point in: bias'[n] = bias[n] / (sa sb[n]) - za colsum_B[n], scales
//   sa sb[n] per column (or one), then GeLU as an eltwise post-op, output_scale as a
//   per-column binary mul post-op and the residual as a binary add post-op, as the fp32
//   kernel does; a quantized Y (y_scale) as QuantizeLinear's division, rounding and zero
//   point in post-ops into a u8/s8 dst;
// - dynamic (or where the product must be split to stay exact): raw int32 sums, then a
//   vectorized epilogue per row, y = sa[m] sb[n] (acc - za[m] colsum[n]) + bias[n]
//   (the zero-point correction is exact integer arithmetic, so no cancellation), the
//   vectorized GeLU, the output_scale product and the residual add of vec_ops.h. One
//   parallel region does it all (issue 20): each thread takes its share of the rows in
//   blocks (up to 1 MiB of sums) and per block quantizes A's rows, runs the product on one
//   thread (a oneDNN primitive made for one thread) and the epilogue while the sums are
//   in cache; before, the quantization, the product and the epilogue were three regions,
//   each with its fork/join (a cost that grows on a loaded machine).
// With y_dynamic_type, Y is written in the per-row form per-token readers take (u8 Y, a
// scale and zero point per row): the epilogue quantizes each finished float row while it
// is in cache (quant_ops.h quantize_row_dynamic, the reader's own call); a fused static
// node writes float rows into scratch and quantizes them in a second pass.
// With norm_dynamic_type (fuse_qmatmul_layer_norm), each finished float row (Y, written
// when read) is also normalized and quantized per row while it is in cache, with the
// calls octet.LayerNormQuantize's per-row mode makes (vec_ops().norm_row, then
// quantize_row_dynamic), so the QMatMuls reading Q see the same bits as from that node;
// no parallel region and no pass over Y of its own (issue 20). Such nodes take the row
// blocks (never the fused primitive).
// Primitives are cached per (M, threads) (the row blocks' per (block rows, 1)). Empty tensors, inputs that differ from what
// inference promised, and shapes oneDNN only has a reference implementation for go to
// the reference kernel (with B unpacked from the state).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/dnnl_int8_gemm.h"
#include "kernels/cpu/dnnl_matmul.h"
#include "kernels/kernel.h"

namespace octet::dnnl_cpu {

class QMatMulState : public KernelState {
 public:
  // nullptr when the node needs the reference kernel (see above). Throws dnnl::error on
  // oneDNN failures.
  static std::unique_ptr<QMatMulState> create(const Node& node);

  bool owns_input(size_t i) const override { return i == 3; }

  bool is_static() const { return static_; }
  // A arrives quantized (uint8, or int8 when int8_activation()), with the static parameters.
  bool quantized_a() const { return quantized_a_; }
  bool int8_activation() const { return int8_activation_; }
  // A is uint8 quantized per row: a_scale (float32) / a_zero_point (int32) per row come
  // with each run.
  bool per_row_a() const { return per_row_a_; }
  float static_scale() const { return sa_; }
  int32_t static_zero_point() const { return za_; }  // uint8 domain (int8 + 128)
  // Rows [begin, end) of a quantized A into the uint8 domain of the product (int8 shifted
  // by +128; uint8 needs no copy, so only int8 calls this), with the static scale and
  // zero point in sa / za.
  void shift_rows(const int8_t* a, int64_t begin, int64_t end, uint8_t* qa, float* sa, int32_t* za) const;
  // True when static runs use the one fused primitive (else raw sums + epilogue).
  bool fused() const { return fused_; }
  const Int8Gemm& gemm() const { return *gemm_; }
  int64_t k() const { return gemm_->k(); }
  int64_t n() const { return gemm_->n(); }
  Activation activation() const { return activation_; }
  bool has_residual() const { return residual_; }
  bool has_output_scale() const { return !out_scale_.empty(); }

  // Quantizes rows [begin, end) of A [M, K] into qa (uint8), with each row's scale and
  // zero point (uint8 domain) in sa / za.
  void quantize_rows(const float* a, int64_t begin, int64_t end, uint8_t* qa, float* sa, int32_t* za) const;
  // Where the output rows go: y is float32 [M, N], or uint8/int8 when Y is quantized
  // (quantized_y()), or uint8 with each row's scale / zero point in row_scale / row_zero
  // (per_row_y()).
  struct Output {
    void* y;  // null: Y is not read (a normalizing node's float Y)
    float* row_scale = nullptr;
    int32_t* row_zero = nullptr;
    // The LayerNorm epilogue's outputs (has_norm()): Q, its rows' scale / zero point, and
    // the rows normalized with norm_scale / norm_bias (null: not read).
    uint8_t* norm_q = nullptr;
    float* norm_scale = nullptr;
    int32_t* norm_zero = nullptr;
    float* norm_y = nullptr;
  };
  // Rows [begin, end) of the output from their raw sums (sums[0] is row begin's): scale,
  // bias, activation, residual.
  void epilogue_rows(const int32_t* sums, const float* sa, const int32_t* za, const float* residual, int64_t begin,
                     int64_t end, const Output& out) const;
  // Rows [begin, end) of a float result y [M, N] into the per-row form (per_row_y()).
  void quantize_output_rows(const float* y, int64_t begin, int64_t end, const Output& out) const;
  // The fused static primitive for M rows at `threads` (cached); nullptr when unusable.
  std::shared_ptr<const Int8Gemm::Entry> fused_primitive(int64_t m, int threads) const;
  // Runs it: qa [M, K] -> y [M, N], with the residual [M, N] when the node has one.
  void run_fused(const KernelContext& ctx, const Int8Gemm::Entry& entry, const uint8_t* qa, int64_t m,
                 const float* residual, void* y) const;
  // Y quantized (y_scale given): its element type, uint8 or int8.
  bool quantized_y() const { return quantized_y_; }
  // Y quantized per row (y_dynamic_type): outputs (Y uint8, y_scale [rows], y_zero_point [rows]).
  bool per_row_y() const { return per_row_y_; }
  // Y is also normalized and quantized per row (norm_dynamic_type): outputs (Y float,
  // Q uint8, q_scale, q_zero_point, normalized Y?).
  bool has_norm() const { return norm_; }
  DType output_dtype() const {
    return per_row_y_ ? DType::UInt8 : !quantized_y_ ? DType::Float32 : int8_y_ ? DType::Int8 : DType::UInt8;
  }

  // Reference runs so far, and the oneDNN implementations cached (tests, reports).
  void count_reference_run() const { ++reference_runs_; }
  int64_t reference_runs() const { return reference_runs_.load(); }
  std::vector<std::string> implementations() const;
  int64_t primitives_created() const { return fused_cache_.created() + gemm_->primitives_created(); }

 private:
  QMatMulState() = default;
  dnnl::memory::data_type y_type() const;

  std::unique_ptr<Int8Gemm> gemm_;
  bool static_ = true;
  bool quantized_a_ = false;
  bool per_row_a_ = false;
  bool int8_activation_ = false;  // static: a_zero_point is int8; dynamic: dynamic_type int8
  float sa_ = 1;                  // static a_scale
  int32_t za_ = 0;                // static a_zero_point, uint8 domain (+128 for int8)
  std::vector<float> sb_;         // b_scale per column
  std::vector<float> bias_;       // empty: none
  std::vector<float> channel_scale_;  // a_channel_scale (empty: none)
  std::vector<float> out_scale_;      // output_scale per column (empty: none)
  bool quantized_y_ = false;          // y_scale given: Y is uint8 (int8 when int8_y_)
  bool int8_y_ = false;
  float y_scale_ = 1;
  int32_t y_zero_ = 0;                // y_zero_point as its type's value
  bool per_row_y_ = false;            // y_dynamic_type given: Y quantized per row
  bool int8_row_y_ = false;           // ... symmetric int8 rows (stored + 128)
  bool norm_ = false;                 // norm_dynamic_type given: the LayerNorm epilogue
  bool norm_int8_ = false;            // ... its rows symmetric int8 (stored + 128)
  float norm_eps_ = 1e-5f;
  // LayerNorm parameters: the normalized Y's (norm_g_, norm_b_) and Q's (the smoothed
  // copy when given, else the same); an empty bias is none.
  std::vector<float> norm_g_, norm_b_, norm_qg_, norm_qb_;
  Activation activation_ = Activation::None;
  bool residual_ = false;
  // Fused static path: per-column output scales sa sb[n] and the bias in accumulator units.
  bool fused_ = false;
  bool per_column_ = false;
  std::vector<float> scales_, bias_acc_;
  PrimitiveCache<Int8Gemm::Entry> fused_cache_;
  mutable std::atomic<int64_t> reference_runs_{0};
};

// Registers octet.QMatMul.
void register_qmatmul(KernelRegistry& r);
// Registers ai.onnx MatMulInteger and QLinearMatMul (dnnl_qgemm_onnx.cpp).
void register_qgemm_onnx(KernelRegistry& r);
// Registers ai.onnx ConvInteger (im2col + the int8 product; dnnl_conv_integer.cpp).
void register_conv_integer(KernelRegistry& r);

}  // namespace octet::dnnl_cpu
