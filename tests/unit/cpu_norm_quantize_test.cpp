// octet.LayerNormQuantize: the optimized kernel (src/kernels/cpu/cpu_norm_quantize.cpp)
// against the reference kernel on edge shapes, uint8 and int8 outputs, with and without
// bias, a separate quantized branch (q_scale / q_bias) and the float output Y, one and two
// threads, at every ISA level; and against the two kernels it replaces (LayerNormalization
// then QuantizeLinear, optimized), which it must match bit for bit.
//
// Bounds: Y as the LayerNormalization kernel test holds it (1e-6 relative, 1e-6 absolute:
// the statistics are float32 here, double in the reference); Q within one level of the
// reference (a value within that float rounding of a rounding boundary may round the
// other way) and such flips rare (at most 1 in 500 elements).
#include <gtest/gtest.h>

#include <cstdlib>

#include "norm_quantize_test_util.h"

namespace octet::testing {
namespace {

using NqCase = NormQuantCase;

// A range a little narrower than the outputs', so the ends saturate.
CpuCall call_of(const NqCase& c) {
  CpuCall call = layer_norm_quantize_call(
      c, Tensor::scalar<float>(5.0f / 255.0f),
      c.type == DType::Int8 ? Tensor::scalar<int8_t>(-7) : Tensor::scalar<uint8_t>(121));
  call.num_outputs = c.want_y ? 2 : 1;
  return call;
}

void check(const NqCase& c) {
  const CpuCall call = call_of(c);
  const std::vector<Tensor> want = run_call(call, KernelChoice::Reference);
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    const std::string what = norm_quant_label(c) + " at " + isa_name(level);
    int optimized = 0;
    const std::vector<Tensor> got = run_call(call, KernelChoice::Optimized, &optimized);
    EXPECT_EQ(optimized, 1) << what;
    ASSERT_EQ(got.size(), want.size()) << what;
    ASSERT_EQ(got[0].dtype(), c.type) << what;
    ASSERT_EQ(got[0].shape(), c.shape) << what;
    expect_levels_within_one(got[0], want[0], what);
    if (c.want_y) expect_close(got[1], want[1], {1e-6, 1e-6}, what + " Y");

    // The kernels it replaces, optimized: LayerNormalization (Q's parameters) then QuantizeLinear.
    CpuCall norm{"LayerNormalization", {call.inputs[0], c.branch ? call.inputs[5] : call.inputs[1]}};
    norm.inputs.push_back(c.branch ? (c.bias ? call.inputs[6] : std::nullopt) : call.inputs[2]);
    norm.attrs = {Attribute::make_float("epsilon", 1e-5f)};
    norm.threads = c.threads;
    const Tensor normalized = run_call(norm, KernelChoice::Optimized)[0];
    CpuCall quant{"QuantizeLinear", {normalized, call.inputs[3], call.inputs[4]}};
    const Tensor q = run_call(quant, KernelChoice::Optimized)[0];
    ASSERT_EQ(q.bytes(), got[0].bytes()) << what;
    // Empty tensors may have no buffer, and memcmp takes no null pointer.
    const bool same = q.bytes() == 0 || std::memcmp(q.raw(), got[0].raw(), q.bytes()) == 0;
    EXPECT_TRUE(same) << what << ": Q differs from LayerNorm + QuantizeLinear";
    if (c.want_y) {
      CpuCall plain{"LayerNormalization", {call.inputs[0], call.inputs[1], call.inputs[2]}};
      plain.attrs = norm.attrs;
      expect_close(got[1], run_call(plain, KernelChoice::Optimized)[0], kExact, what + " Y vs LayerNormalization");
    }
  }
}

TEST(CpuLayerNormQuantize, EdgeShapesEveryVariant) {
  for (const NqCase& c : norm_quant_edge_cases()) check(c);
}

TEST(CpuLayerNormQuantize, ThreadedRowsOfAnEncoder) {
  // Enough elements for the rows to be split over the threads (kParallelMinElements).
  for (int threads : {1, 2, 3})
    for (bool branch : {false, true}) {
      NqCase c;
      c.shape = {1, 257, 384};
      c.branch = branch;
      c.threads = threads;
      c.seed = static_cast<uint32_t>(threads * 10 + branch);
      check(c);
    }
}

TEST(CpuLayerNormQuantize, EmptyRowsAndFallbacks) {
  NqCase c;
  c.shape = {0, 8};
  check(c);
  // A per-axis y_scale is not this op: the reference kernel reports it.
  CpuCall call = call_of(NqCase{{2, 8}});
  call.inputs[3] = random_f32({8}, 3, 0.01f, 0.02f);
  EXPECT_THROW(run_call(call, KernelChoice::Optimized), std::exception);
  EXPECT_THROW(run_call(call, KernelChoice::Reference), std::exception);
}

}  // namespace
}  // namespace octet::testing
