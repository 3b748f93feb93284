// Shared by the octet.LayerNormQuantize kernel tests (per-tensor Q and per-row Q): the case
// description, the call with its random inputs, the edge-shape variants both modes run, and
// the "within one level, flips rare" comparison of quantized outputs.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>

#include "cpu_test_util.h"

namespace octet::testing {

struct NormQuantCase {
  std::vector<int64_t> shape;
  DType type = DType::UInt8;
  bool bias = true;
  bool branch = false;  // q_scale (and q_bias when bias) of their own
  bool want_y = true;
  int threads = 1;
  uint32_t seed = 1;
};

// X in [-4, 6], gamma in [0.2, 2], beta in [-1, 1]; then y_scale / y_zero_point (absent: the
// per-row mode) and the branch's q_scale / q_bias.
inline CpuCall layer_norm_quantize_call(const NormQuantCase& c, std::optional<Tensor> y_scale,
                                        std::optional<Tensor> y_zero_point) {
  const int64_t k = c.shape.back();
  CpuCall call{"LayerNormQuantize", {random_f32(c.shape, c.seed, -4, 6), random_f32({k}, c.seed + 1, 0.2f, 2.0f)}};
  call.inputs.push_back(c.bias ? std::optional<Tensor>(random_f32({k}, c.seed + 2, -1, 1)) : std::nullopt);
  call.inputs.push_back(std::move(y_scale));
  call.inputs.push_back(std::move(y_zero_point));
  if (c.branch) {
    call.inputs.push_back(random_f32({k}, c.seed + 3, 0.1f, 3.0f));
    if (c.bias) call.inputs.push_back(random_f32({k}, c.seed + 4, -2, 2));
  }
  call.attrs = {Attribute::make_float("epsilon", 1e-5f)};
  call.domain = "octet";
  call.threads = c.threads;
  return call;
}

inline std::string norm_quant_label(const NormQuantCase& c) {
  return shape_to_string(c.shape) + " " + dtype_name(c.type) + (c.bias ? " bias" : "") + (c.branch ? " branch" : "") +
         (c.want_y ? " +Y" : "") + " threads " + std::to_string(c.threads);
}

// Every shape edge (one element, odd widths, vector-width boundaries, 3-D, a long row) in
// eight variants: both types, bias or not, a branch or not, Y wanted or not.
inline std::vector<NormQuantCase> norm_quant_edge_cases() {
  std::vector<NormQuantCase> cases;
  uint32_t seed = 1;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{1, 1}, {3, 7}, {2, 16}, {5, 17}, {4, 64}, {2, 65},
                                     {1, 384}, {2, 3, 100}, {33}, {3, 1000}})
    for (int v = 0; v < 8; ++v) {
      NormQuantCase c;
      c.shape = shape;
      c.type = v % 2 ? DType::Int8 : DType::UInt8;
      c.bias = (v / 2) % 2 == 0;
      c.branch = (v / 4) % 2 == 1;
      c.want_y = (v + static_cast<int>(shape.size())) % 3 != 0;
      c.seed = seed++;
      cases.push_back(c);
    }
  return cases;
}

// Q within one level of the reference (a value within float rounding of a rounding boundary
// may round the other way: the optimized statistics are float32, the reference's double),
// and such flips rare: at most 1 in 500 elements.
inline void expect_levels_within_one(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.numel(), want.numel()) << what;
  auto level = [](const Tensor& t, int64_t i) -> int32_t {
    return t.dtype() == DType::Int8 ? t.data<int8_t>()[i] : t.data<uint8_t>()[i];
  };
  int64_t flips = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const int32_t d = std::abs(level(got, i) - level(want, i));
    EXPECT_LE(d, 1) << what << ": element " << i;
    flips += d != 0;
  }
  EXPECT_LE(flips * 500, std::max<int64_t>(got.numel(), 500)) << what << ": " << flips << " levels differ";
}

}  // namespace octet::testing
