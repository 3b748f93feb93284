// The oneDNN ConvTranspose kernel (src/kernels/cpu/dnnl_conv_transpose.cpp) against the
// reference ConvTranspose: 1-D, 2-D and 3-D, ragged channel counts, strides, dilations,
// pads, output_padding, output_shape, auto_pad, groups, batch 1 and 3, with and without
// bias; that the runs did not fall back; the nodes it declines; every ISA level.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "cpu_matmul_test_util.h"
#include "isa_child_runs.h"
#include "kernels/cpu/dnnl_common.h"
#include "kernels/cpu/dnnl_conv.h"

namespace octet {
namespace {

using testing::mm::Operand;
using testing::mm::rand;
using testing::mm::shape_str;

struct Case {
  std::vector<int64_t> x, w;  // X [N, C, D...], W [C, M/group, k...]
  std::vector<Attribute> attrs = {};
  bool bias = true;
  int64_t group = 1;
};

// Optimized against reference; returns how many nodes ran an optimized kernel, and
// checks that a taken node did not fall back at run time.
int check(const Case& c, bool constant_w = true, uint64_t seed = 1) {
  std::vector<Attribute> attrs = c.attrs;
  attrs.push_back(Attribute::make_int("group", c.group));
  std::vector<std::optional<Operand>> ins = {Operand{rand(c.x, seed)}, Operand{rand(c.w, seed + 1), constant_w}};
  if (c.bias) ins.push_back(Operand{rand({c.w[1] * c.group}, seed + 2), true});
  int64_t k = c.w[0] / c.group;
  for (size_t i = 2; i < c.w.size(); ++i) k *= c.w[i];
  std::ostringstream what;
  what << "X " << shape_str(c.x) << " W " << shape_str(c.w) << " group " << c.group << (c.bias ? " bias" : "");
  const int optimized = testing::mm::check_against_reference("ConvTranspose", ins, attrs, k + 1, what.str());
  if (optimized == 1) {
    testing::mm::DirectKernel kernel(testing::mm::one_node("ConvTranspose", ins, attrs));
    std::vector<const Tensor*> inputs;
    for (const auto& in : ins) inputs.push_back(&in->value);
    kernel.run(inputs);
    EXPECT_EQ(dnnl_cpu::conv_transpose_reference_runs(*kernel.state), 0) << what.str();
    for (const std::string& impl : dnnl_cpu::conv_transpose_implementations(*kernel.state)) {
      EXPECT_EQ(impl.rfind("ref", 0), std::string::npos) << impl;
      if (std::getenv("OCTET_TEST_VERBOSE")) std::cout << "[ impl     ] " << what.str() << ": " << impl << "\n";
    }
  }
  return optimized;
}

std::vector<Attribute> geometry(std::vector<int64_t> strides, std::vector<int64_t> pads = {},
                                std::vector<int64_t> dilations = {}, std::vector<int64_t> output_padding = {}) {
  std::vector<Attribute> a = {Attribute::make_ints("strides", std::move(strides))};
  if (!pads.empty()) a.push_back(Attribute::make_ints("pads", std::move(pads)));
  if (!dilations.empty()) a.push_back(Attribute::make_ints("dilations", std::move(dilations)));
  if (!output_padding.empty()) a.push_back(Attribute::make_ints("output_padding", std::move(output_padding)));
  return a;
}

TEST(CpuConvTranspose, DecoderUpsamplingAndRaggedChannels) {
  uint64_t seed = 1;
  for (int64_t c : {1, 3, 17})
    for (int64_t m : {1, 5, 16})
      for (int64_t batch : {1, 3}) {
        // The DINOv2 decoder's geometry: kernel 4, stride 2, pads 1 (doubles the size).
        Case up{{batch, c, 7, 9}, {c, m, 4, 4}, geometry({2, 2}, {1, 1, 1, 1}), (c + m) % 2 == 0};
        EXPECT_EQ(check(up, true, seed++), 1) << shape_str(up.x) << shape_str(up.w);
        Case plain{{batch, c, 5, 5}, {c, m, 3, 3}, geometry({1, 1})};
        EXPECT_EQ(check(plain, true, seed++), 1) << shape_str(plain.x) << shape_str(plain.w);
      }
}

TEST(CpuConvTranspose, OneDThreeDAndEdgeShapes) {
  EXPECT_EQ(check({{2, 3, 11}, {3, 4, 3}, geometry({2}, {1, 0})}), 1);
  EXPECT_EQ(check({{1, 2, 3, 4, 2}, {2, 3, 2, 3, 2}, geometry({2, 1, 2}, {0, 1, 0, 0, 1, 1})}), 1);
  EXPECT_EQ(check({{1, 1, 1, 1}, {1, 1, 1, 1}, geometry({1, 1})}), 1);  // 1x1 everything
  EXPECT_EQ(check({{1, 4, 1, 1}, {4, 8, 2, 2}, geometry({2, 2})}), 1);  // one pixel in
}

TEST(CpuConvTranspose, DilationsOutputPaddingOutputShapeAutoPad) {
  EXPECT_EQ(check({{1, 3, 6, 5}, {3, 4, 3, 3}, geometry({2, 3}, {1, 0, 0, 1}, {2, 1}, {1, 2})}), 1);
  Case shaped{{1, 2, 3, 3}, {2, 3, 3, 3}, geometry({3, 2})};
  shaped.attrs.push_back(Attribute::make_ints("output_shape", {10, 8}));
  check(shaped);  // taken or declined, it must match the reference
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    Case c{{2, 3, 5, 4}, {3, 2, 3, 3}, geometry({2, 2})};
    c.attrs.push_back(Attribute::make_string("auto_pad", mode));
    check(c);
  }
}

TEST(CpuConvTranspose, Groups) {
  EXPECT_EQ(check({{1, 4, 5, 5}, {4, 3, 3, 3}, geometry({2, 2}, {1, 1, 1, 1}), true, 2}), 1);
  EXPECT_EQ(check({{2, 6, 4, 4}, {6, 1, 4, 4}, geometry({2, 2}, {1, 1, 1, 1}), false, 6}), 1);  // depthwise
}

TEST(CpuConvTranspose, DeclinedNodesRunTheReferenceKernel) {
  EXPECT_EQ(check({{1, 3, 5, 5}, {3, 2, 3, 3}, geometry({1, 1})}, /*constant_w=*/false), 0);
  EXPECT_EQ(check({{1, 2, 3, 3, 3, 3}, {2, 2, 2, 2, 2, 2}, geometry({1, 1, 1, 1})}), 0);  // 4 spatial dims
}

TEST(CpuConvTransposeIsa, EveryLevelInAChildProcess) {
  testing::expect_child_runs_pass_at_every_isa("CpuConvTranspose.*", "cpu_conv_transpose_isa");
}

}  // namespace
}  // namespace octet
