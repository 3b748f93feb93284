// Optimized Cast (to float32 from 8/16-bit integers and bool) against the reference: bit
// identical on every such source type, on empty, scalar, ragged and multi-chunk tensors;
// every other pair of types goes to the reference kernel.
#include <gtest/gtest.h>

#include <cstring>

#include "cpu_test_util.h"

namespace octet::testing {
namespace {

// Every bit pattern of the 8-bit types, and spread 16-bit values, repeated to `n`.
Tensor integer_ramp(DType t, std::vector<int64_t> shape) {
  Tensor out(t, shape);
  const int64_t n = out.numel();
  const int bytes = t == DType::Int16 || t == DType::UInt16 ? 2 : 1;
  uint8_t* p = out.mutable_raw();
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t v = static_cast<uint32_t>(i) * 2654435761u >> 7;
    if (t == DType::Bool) p[i] = v & 1;
    else if (bytes == 1) p[i] = static_cast<uint8_t>(i);
    else std::memcpy(p + 2 * i, &v, 2);
  }
  return out;
}

CpuCall cast_to(int64_t to, Tensor x) {
  CpuCall call{"Cast", {std::move(x)}, {Attribute::make_int("to", to)}};
  call.threads = 4;
  return call;
}

TEST(CpuCast, SmallIntegersAndBoolToFloatAreBitIdentical) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {1}, {255}, {256}, {3, 7, 5}, {2, 4099}, {1, 128, 512}};
  for (DType t : {DType::Int8, DType::UInt8, DType::Int16, DType::UInt16, DType::Bool})
    for (const auto& shape : shapes) {
      int optimized = -1;
      const CpuCall call = cast_to(1, integer_ramp(t, shape));
      expect_matches_reference(call, kExact, dtype_name(t) + " " + shape_to_string(shape));
      run_call(call, KernelChoice::Optimized, &optimized);
      EXPECT_EQ(optimized, 1) << dtype_name(t);
    }
}

TEST(CpuCast, WideIntegersToFloatRoundAsTheReference) {
  // Through double, as the reference: exact below 2^53, then one rounding to float (and
  // 2^53 + 1 is where a direct int64 -> float conversion could round differently).
  const int64_t big = (int64_t{1} << 53) + 1;
  const std::vector<int64_t> i64 = {0, -1, 16777217, -16777219, big, -big, INT64_MAX, INT64_MIN, 123456789012345};
  const std::vector<int32_t> i32 = {0, -1, 16777217, -16777219, INT32_MAX, INT32_MIN, 7};
  const std::vector<uint32_t> u32 = {0, 1, 16777217, UINT32_MAX, 4000000001u};
  std::vector<CpuCall> calls = {cast_to(1, Tensor::from_vector<int64_t>({static_cast<int64_t>(i64.size())}, i64)),
                                cast_to(1, Tensor::from_vector<int32_t>({static_cast<int64_t>(i32.size())}, i32)),
                                cast_to(1, Tensor::from_vector<uint32_t>({static_cast<int64_t>(u32.size())}, u32))};
  std::vector<int64_t> mask(1 * 128 * 384);
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = static_cast<int64_t>(i % 3 == 0);
  calls.push_back(cast_to(1, Tensor::from_vector<int64_t>({1, 128, 384}, mask)));  // multi-chunk, threads
  for (const CpuCall& call : calls) {
    int optimized = -1;
    expect_matches_reference(call, kExact, dtype_name(call.inputs[0]->dtype()));
    run_call(call, KernelChoice::Optimized, &optimized);
    EXPECT_EQ(optimized, 1);
  }
}

TEST(CpuCast, OtherTypePairsGoToTheReference) {
  int optimized = -1;
  // float32 -> int8 truncates and saturates, float64 -> float32 is not taken: the
  // reference's rules, so the kernel declines these nodes at session creation.
  const CpuCall wide = cast_to(1, Tensor::from_vector<double>({2}, {16777217.0, -5.0}));
  EXPECT_EQ(run_call(wide, KernelChoice::Optimized, &optimized)[0].data<float>()[0], 16777216.0f);
  EXPECT_EQ(optimized, 0);
  const CpuCall narrow = cast_to(3 /* INT8 */, Tensor::from_vector<float>({3}, {1.5f, -3.0f, 2.0f}));
  EXPECT_EQ(run_call(narrow, KernelChoice::Optimized, &optimized)[0].data<int8_t>()[1], -3);
  EXPECT_EQ(optimized, 0);
}

}  // namespace
}  // namespace octet::testing
