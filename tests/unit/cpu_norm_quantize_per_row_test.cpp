// The per-row mode of octet.LayerNormQuantize (dynamic_type) and the QMatMul that reads
// its output (a uint8 A with per-row a_scale / int32 a_zero_point): the optimized kernels
// against the reference kernels on edge shapes, uint8 and int8, with and without bias, a
// separate quantized branch (q_scale / q_bias) and the float output Y, one and two
// threads, at every ISA level. That the pair gives the same bits as a dynamic QMatMul
// quantizing the float LayerNorm output itself is pass_fuse_layer_norm_quantize_test's.
//
// Bounds: the statistics are float32 in the optimized kernel, double in the reference,
// so a row's min / max (and with them its scale) agree to float rounding, its zero point
// and each level of Q to within one (a value within that rounding of a boundary), such
// flips rare (at most 1 in 500 elements); Y as the LayerNormalization kernel test holds it.
#include <gtest/gtest.h>

#include <cstdlib>

#include "norm_quantize_test_util.h"
#include "kernels/cpu/quant_ops.h"
#include "qmatmul_test_util.h"

namespace octet::testing {
namespace {

using RowCase = NormQuantCase;

// No y_scale / y_zero_point: per row, of the type dynamic_type names.
CpuCall call_of(const RowCase& c) {
  CpuCall call = layer_norm_quantize_call(c, std::nullopt, std::nullopt);
  call.attrs.push_back(Attribute::make_string("dynamic_type", c.type == DType::Int8 ? "int8" : "uint8"));
  call.num_outputs = c.want_y ? 4 : 3;
  return call;
}

void check(const RowCase& c) {
  const CpuCall call = call_of(c);
  const std::vector<Tensor> want = run_call(call, KernelChoice::Reference);
  const std::vector<int64_t> lead(c.shape.begin(), c.shape.end() - 1);
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    const std::string what = norm_quant_label(c) + " at " + isa_name(level);
    int optimized = 0;
    const std::vector<Tensor> got = run_call(call, KernelChoice::Optimized, &optimized);
    EXPECT_EQ(optimized, 1) << what;
    ASSERT_EQ(got.size(), want.size()) << what;
    ASSERT_EQ(got[0].dtype(), DType::UInt8) << what;
    ASSERT_EQ(got[0].shape(), c.shape) << what;
    ASSERT_EQ(got[1].shape(), lead) << what;
    ASSERT_EQ(got[2].dtype(), DType::Int32) << what;
    ASSERT_EQ(got[2].shape(), lead) << what;
    expect_levels_within_one(got[0], want[0], what);
    expect_close(got[1], want[1], {1e-5, 0}, what + " a_scale");
    for (int64_t r = 0; r < got[2].numel(); ++r) {
      const int32_t z = got[2].data<int32_t>()[r];
      EXPECT_LE(std::abs(z - want[2].data<int32_t>()[r]), 1) << what << ": row " << r;
      if (c.type == DType::Int8) {
        EXPECT_EQ(z, 128) << what << ": int8 rows are symmetric (zero point 128 in uint8)";
      }
    }
    if (c.want_y) expect_close(got[3], want[3], {1e-6, 1e-6}, what + " Y");
  }
}

TEST(CpuLayerNormQuantizePerRow, EdgeShapesEveryVariant) {
  for (const RowCase& c : norm_quant_edge_cases()) {
    SCOPED_TRACE(norm_quant_label(c));
    check(c);
  }
}

TEST(CpuLayerNormQuantizePerRow, ThreadedRowsOfAnEncoder) {
  for (int threads : {1, 2})
    for (DType type : {DType::UInt8, DType::Int8}) {
      RowCase c;
      c.shape = {1, 257, 384};
      c.type = type;
      c.branch = threads == 2;
      c.threads = threads;
      c.seed = static_cast<uint32_t>(threads * 10);
      SCOPED_TRACE(norm_quant_label(c));
      check(c);
    }
}

TEST(CpuLayerNormQuantizePerRow, ConstantRowsAndBadInputs) {
  // A constant row normalizes to beta (bias absent: zeros): scale 1 as the dynamic rule
  // gives it, and the optimized kernel agrees with the reference.
  RowCase c;
  c.shape = {3, 8};
  c.bias = false;
  CpuCall call = call_of(c);
  call.inputs[0] = Tensor(DType::Float32, {3, 8});
  const std::vector<Tensor> got = run_call(call, KernelChoice::Optimized);
  const std::vector<Tensor> want = run_call(call, KernelChoice::Reference);
  EXPECT_EQ(got[1].to_float_vector(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(std::memcmp(got[0].raw(), want[0].raw(), got[0].bytes()), 0);
  // y_scale next to dynamic_type is not this mode: the reference kernel reports it.
  call.inputs[3] = Tensor::scalar<float>(0.1f);
  EXPECT_THROW(run_call(call, KernelChoice::Optimized), std::exception);
  EXPECT_THROW(run_call(call, KernelChoice::Reference), std::exception);
}

// QMatMul reading a per-row quantized A: the dynamic path (raw sums + per-row epilogue)
// with the given parameters, against the reference, per-tensor and per-column b_scale,
// bias, GeLU and a residual, at every ISA level and 1-2 threads. A, a_scale, a_zero_point
// and the residual are graph inputs (as a LayerNormQuantize writes them), B and the rest
// constants (the optimized kernel packs B at session creation).
TEST(CpuLayerNormQuantizePerRow, QMatMulReadsPerRowParameters) {
  using mm::Operand;
  for (std::vector<int64_t> a_shape : {std::vector<int64_t>{1, 5}, {7, 33}, {2, 65, 64}, {1, 130, 384}})
    for (int v = 0; v < 4; ++v) {
      const int64_t k = a_shape.back(), n = v % 2 ? 48 : 17;
      std::vector<int64_t> lead(a_shape.begin(), a_shape.end() - 1), y_shape = lead;
      y_shape.push_back(n);
      Tensor zero(DType::Int32, lead);
      for (int64_t r = 0; r < zero.numel(); ++r) zero.mutable_data<int32_t>()[r] = v / 2 ? 128 : int32_t(r * 37 % 256);
      std::vector<std::optional<Operand>> ins = {
          Operand{qmm::rand_bytes(DType::UInt8, a_shape, 11 + v)},
          Operand{random_f32(lead, 5 + v, 0.001f, 0.05f)},
          Operand{zero},
          Operand{qmm::rand_int8({k, n}, 21 + v), true},
          Operand{v % 2 ? random_f32({n}, 3, 0.001f, 0.01f) : Tensor::scalar<float>(0.004f), true},
          std::nullopt,
          Operand{random_f32({n}, 4, -1, 1), true}};
      if (v / 2) ins.push_back(Operand{random_f32(y_shape, 6)});
      std::vector<Attribute> attrs = {Attribute::make_string("dynamic_type", "uint8")};
      if (v == 1) attrs.push_back(Attribute::make_string("activation", "gelu"));
      auto g = mm::one_node("QMatMul", ins, attrs, "octet");
      const NamedTensors in = mm::feeds(ins);
      const Tensor want = mm::session(g, KernelChoice::Reference).run(in)[0].second;
      for (IsaLevel level : available_isas())
        for (int threads : {1, 2}) {
          ScopedIsaLevel scoped(level);
          const std::string what = shape_to_string(a_shape) + " variant " + std::to_string(v) + " threads " +
                                   std::to_string(threads) + " at " + isa_name(level);
          Session fast = mm::session(g, KernelChoice::Optimized, threads);
          const int64_t fallbacks = cpu::int8_reference_runs();
          const Tensor got = fast.run(in)[0].second;
          EXPECT_EQ(fast.optimized_nodes(), 1) << what;
          EXPECT_EQ(cpu::int8_reference_runs(), fallbacks) << what << ": ran the reference kernel";
          qmm::expect_close(got, want, what);
        }
    }
}

}  // namespace
}  // namespace octet::testing
