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

#include "cpu_test_util.h"

namespace octet::testing {
namespace {

struct NqCase {
  std::vector<int64_t> shape;
  DType type = DType::UInt8;
  bool bias = true;
  bool branch = false;  // q_scale (and q_bias when bias) of their own
  bool want_y = true;
  int threads = 1;
  uint32_t seed = 1;
};

CpuCall call_of(const NqCase& c) {
  const int64_t k = c.shape.back();
  CpuCall call{"LayerNormQuantize", {random_f32(c.shape, c.seed, -4, 6), random_f32({k}, c.seed + 1, 0.2f, 2.0f)}};
  call.inputs.push_back(c.bias ? std::optional<Tensor>(random_f32({k}, c.seed + 2, -1, 1)) : std::nullopt);
  // A range a little narrower than the outputs', so the ends saturate.
  call.inputs.push_back(Tensor::scalar<float>(5.0f / 255.0f));
  call.inputs.push_back(c.type == DType::Int8 ? Tensor::scalar<int8_t>(-7) : Tensor::scalar<uint8_t>(121));
  if (c.branch) {
    call.inputs.push_back(random_f32({k}, c.seed + 3, 0.1f, 3.0f));
    if (c.bias) call.inputs.push_back(random_f32({k}, c.seed + 4, -2, 2));
  }
  call.attrs = {Attribute::make_float("epsilon", 1e-5f)};
  call.domain = "octet";
  call.num_outputs = c.want_y ? 2 : 1;
  call.threads = c.threads;
  return call;
}

std::string label(const NqCase& c) {
  return shape_to_string(c.shape) + " " + dtype_name(c.type) + (c.bias ? " bias" : "") + (c.branch ? " branch" : "") +
         (c.want_y ? " +Y" : "") + " threads " + std::to_string(c.threads);
}

int32_t level_at(const Tensor& t, int64_t i) {
  return t.dtype() == DType::Int8 ? t.data<int8_t>()[i] : t.data<uint8_t>()[i];
}

void check(const NqCase& c) {
  const CpuCall call = call_of(c);
  const std::vector<Tensor> want = run_call(call, KernelChoice::Reference);
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    const std::string what = label(c) + " at " + isa_name(level);
    int optimized = 0;
    const std::vector<Tensor> got = run_call(call, KernelChoice::Optimized, &optimized);
    EXPECT_EQ(optimized, 1) << what;
    ASSERT_EQ(got.size(), want.size()) << what;
    ASSERT_EQ(got[0].dtype(), c.type) << what;
    ASSERT_EQ(got[0].shape(), c.shape) << what;
    int64_t flips = 0;
    for (int64_t i = 0; i < got[0].numel(); ++i) {
      const int32_t d = std::abs(level_at(got[0], i) - level_at(want[0], i));
      EXPECT_LE(d, 1) << what << ": element " << i;
      flips += d != 0;
    }
    EXPECT_LE(flips * 500, std::max<int64_t>(got[0].numel(), 500)) << what << ": " << flips << " levels differ";
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
  uint32_t seed = 1;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{1, 1}, {3, 7}, {2, 16}, {5, 17}, {4, 64}, {2, 65},
                                     {1, 384}, {2, 3, 100}, {33}, {3, 1000}})
    for (int v = 0; v < 8; ++v) {
      NqCase c;
      c.shape = shape;
      c.type = v % 2 ? DType::Int8 : DType::UInt8;
      c.bias = (v / 2) % 2 == 0;
      c.branch = (v / 4) % 2 == 1;
      c.want_y = (v + static_cast<int>(shape.size())) % 3 != 0;
      c.seed = seed++;
      check(c);
    }
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
