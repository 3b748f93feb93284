// Optimized Gelu (ai.onnx and octet, both approximations), Tanh, Erf, Sigmoid, Sqrt, Relu,
// Exp and octet.SwiGLU (one input and two) against their reference twins at every ISA level.
//
// Bounds: rel 1e-6 with an absolute floor of 1e-6 for GeLU (the float reference computes
// 0.5*x*(1+erf) and loses ~1e-7 * |x| to cancellation for x << 0) and 1e-7 for Tanh/Erf/
// Sigmoid (about 1 ulp at 1); Exp is a ~2 ulp polynomial (rel 1e-6) that keeps
// subnormals, overflows to +inf and propagates NaN as std::exp does; Sqrt and Relu are exact.
#include <gtest/gtest.h>

#include "cpu_test_util.h"

namespace octet::testing {
namespace {

std::vector<Tensor> activation_inputs() {
  std::vector<Tensor> out;
  for (int64_t n : {1, 5, 8, 13, 16, 17, 33, 70}) out.push_back(random_f32({n}, static_cast<uint32_t>(n), -8, 8));
  out.push_back(random_f32({2, 3, 4099}, 1, -10, 10));  // big enough for the thread team
  out.push_back(Tensor::from_vector<float>({6}, {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-30f}));
  return out;
}

TEST(CpuActivation, GeluBothDomainsBothApproximations) {
  double worst = 0;
  for (const char* domain : {"", "octet"})
    for (const char* approx : {"none", "tanh"})
      for (const Tensor& x : activation_inputs()) {
        CpuCall call{"Gelu", {x}, {Attribute::make_string("approximate", approx)}, domain};
        call.threads = 3;
        worst = std::max(worst, expect_matches_reference(call, {1e-6, 1e-6}, std::string(domain) + " " + approx));
      }
  std::printf("[ accuracy ] Gelu: max error %.3g (relative, floor 1)\n", worst);
}

TEST(CpuActivation, UnaryOps) {
  for (const Tensor& x : activation_inputs()) {
    expect_matches_reference({"Tanh", {x}}, {1e-6, 1e-7});
    expect_matches_reference({"Erf", {x}}, {1e-6, 1e-7});
    expect_matches_reference({"Sigmoid", {x}}, {1e-6, 1e-7});
    expect_matches_reference({"Relu", {x}}, kExact);
    expect_matches_reference({"Exp", {x}}, {1e-6, 0});
  }
  // The range ends: overflow to +inf past 88.72, subnormal results below -87.3, 0 past
  // -103.9 (std::exp's own results there are the reference's).
  const std::vector<float> ends = {88.0f, 88.7f, 88.8f, 100.0f, -87.0f, -88.0f, -95.0f, -103.0f, -104.0f, -200.0f};
  expect_matches_reference({"Exp", {Tensor::from_vector<float>({static_cast<int64_t>(ends.size())}, ends)}}, {1e-6, 1e-44});
  expect_matches_reference({"Sqrt", {random_f32({4099}, 3, 0, 100)}}, kExact);
  expect_matches_reference({"Sqrt", {Tensor::from_vector<float>({4}, {-1.0f, 0.0f, INFINITY, NAN})}}, kExact);
}

// SwiGLU: (g * sigmoid(g)) * u, each rounding as the reference's Sigmoid, Mul, Mul; the
// sigmoid is the Sigmoid kernel's (~1 ulp), so the same bounds. Odd widths (vector tails),
// one row and many, one thread and two (a prefill-sized [2, 64, 2 * 1536] shares rows).
TEST(CpuActivation, SwiGluOneAndTwoInputs) {
  const std::vector<std::vector<int64_t>> shapes = {{1}, {5}, {2, 17}, {3, 1, 16}, {1, 1, 1536}, {2, 64, 1536}};
  uint32_t seed = 1;
  for (const auto& shape : shapes)
    for (int threads : {1, 2}) {
      const Tensor g = random_f32(shape, seed++, -9, 9), u = random_f32(shape, seed++, -4, 4);
      CpuCall two{"SwiGLU", {g, u}, {}, "octet"};
      two.threads = threads;
      expect_matches_reference(two, {1e-6, 1e-7}, "two inputs");
      std::vector<int64_t> joined = shape;
      joined.back() *= 2;
      CpuCall one{"SwiGLU", {random_f32(joined, seed++, -9, 9)}, {}, "octet"};
      one.threads = threads;
      expect_matches_reference(one, {1e-6, 1e-7}, "one input");
    }
  // The ends: sigmoid's saturation, infinities, NaN, signed zeros.
  const Tensor ends = Tensor::from_vector<float>({8}, {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-30f, 100.0f, -100.0f});
  expect_matches_reference({"SwiGLU", {ends, random_f32({8}, 9)}, {}, "octet"}, {1e-6, 1e-7}, "ends");
}

TEST(CpuActivation, SwiGluBadShapesReportTheReferenceError) {
  // An odd last axis (one input), and G and U of different shapes (two): the reference's
  // errors, not a wrong read.
  EXPECT_THROW(run_call({"SwiGLU", {random_f32({2, 7}, 1)}, {}, "octet"}, KernelChoice::Optimized), Error);
  EXPECT_THROW(run_call({"SwiGLU", {random_f32({2, 8}, 1), random_f32({1, 8}, 2)}, {}, "octet"}, KernelChoice::Optimized),
               Error);
}

TEST(CpuActivation, BadApproximateStillReportsTheError) {
  CpuCall call{"Gelu", {random_f32({4}, 1)}, {Attribute::make_string("approximate", "fast")}};
  EXPECT_THROW(run_call(call, KernelChoice::Optimized), Error);
}

}  // namespace
}  // namespace octet::testing
