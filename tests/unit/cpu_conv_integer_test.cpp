// The optimized ConvInteger (dnnl_conv_integer.cpp: im2col + the shared int8 product)
// against the reference kernel, bit for bit on its int32 outputs: 1-D, 2-D and 3-D
// convolutions, pads (explicit, larger than the kernel, auto_pad SAME_UPPER / SAME_LOWER /
// VALID), strides, dilations, groups (depthwise included), uint8 and int8 X and W in every
// combination, zero points absent / scalar / per output channel, batches, images long
// enough to be cut into row blocks, and two threads. CpuQMatMulIsa runs this suite at every
// ISA level too (the non-VNNI levels split A to stay exact).
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "cpu_test_util.h"
#include "kernels/cpu/quant_ops.h"
#include "qmatmul_test_util.h"

namespace octet {
namespace {

using testing::mm::Operand;

using testing::qmm::rand_bytes;
using testing::qmm::scalar_of;

Tensor vector_of(DType t, int64_t n, int base) { return testing::qmm::vector_of(t, n, base, 37); }

struct ConvCase {
  std::string what;
  std::vector<int64_t> x, w;  // X [N, C, spatial...], W [M, C/group, kernel...]
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads;  // empty: the attribute is left out
  std::string auto_pad;                           // empty: left out
  DType xt = DType::UInt8, wt = DType::Int8;
  int zero_points = 1;  // 0 none, 1 scalars, 2 scalar x and per-channel w
  int threads = 1;
};

void check(const ConvCase& c, uint64_t seed) {
  std::ostringstream label;
  label << c.what << " (" << dtype_name(c.xt) << " x " << dtype_name(c.wt) << ", zp " << c.zero_points << ")";
  std::vector<std::optional<Operand>> ins = {Operand{rand_bytes(c.xt, c.x, seed)},
                                             Operand{rand_bytes(c.wt, c.w, seed + 1), true}};
  if (c.zero_points == 1) {
    ins.push_back(Operand{scalar_of(c.xt, 9)});  // a run-time scalar, as DynamicQuantizeLinear gives it
    ins.push_back(Operand{scalar_of(c.wt, -3), true});
  } else if (c.zero_points == 2) {
    ins.push_back(Operand{scalar_of(c.xt, 200)});
    ins.push_back(Operand{vector_of(c.wt, c.w[0], 5), true});
  }
  std::vector<Attribute> attrs;
  if (c.group != 1) attrs.push_back(Attribute::make_int("group", c.group));
  if (!c.strides.empty()) attrs.push_back(Attribute::make_ints("strides", c.strides));
  if (!c.dilations.empty()) attrs.push_back(Attribute::make_ints("dilations", c.dilations));
  if (!c.pads.empty()) attrs.push_back(Attribute::make_ints("pads", c.pads));
  if (!c.auto_pad.empty()) attrs.push_back(Attribute::make_string("auto_pad", c.auto_pad));
  auto g = testing::mm::one_node("ConvInteger", ins, std::move(attrs), "", 17);
  Session fast = testing::mm::session(g, KernelChoice::Optimized, c.threads);
  Session ref = testing::mm::session(g, KernelChoice::Reference);
  EXPECT_EQ(fast.optimized_nodes(), 1) << label.str();
  const NamedTensors in = testing::mm::feeds(ins);
  const int64_t fallbacks = cpu::int8_reference_runs();
  const NamedTensors got = fast.run(in);
  EXPECT_EQ(cpu::int8_reference_runs(), fallbacks) << label.str() << ": ran the reference kernel";
  const NamedTensors want = ref.run(in);
  const Tensor &a = got.at(0).second, &b = want.at(0).second;
  ASSERT_EQ(a.dtype(), DType::Int32) << label.str();
  ASSERT_EQ(a.shape(), b.shape()) << label.str();
  const int32_t *pa = a.data<int32_t>(), *pb = b.data<int32_t>();
  for (int64_t i = 0; i < a.numel(); ++i)
    if (pa[i] != pb[i]) {
      ADD_FAILURE() << label.str() << ": element " << i << " is " << pa[i] << ", the reference " << pb[i];
      return;
    }
}

ConvCase make(std::string what, std::vector<int64_t> x, std::vector<int64_t> w, int64_t group = 1,
              std::vector<int64_t> strides = {}, std::vector<int64_t> dilations = {}, std::vector<int64_t> pads = {},
              std::string auto_pad = "") {
  ConvCase c;
  c.what = std::move(what);
  c.x = std::move(x);
  c.w = std::move(w);
  c.group = group;
  c.strides = std::move(strides);
  c.dilations = std::move(dilations);
  c.pads = std::move(pads);
  c.auto_pad = std::move(auto_pad);
  return c;
}

std::vector<ConvCase> cases() {
  std::vector<ConvCase> out = {
      make("1-D, Whisper's first stem conv (k 3, pad 1)", {1, 80, 61}, {24, 80, 3}, 1, {}, {}, {1, 1}),
      make("1-D, Whisper's second stem conv (stride 2)", {1, 24, 61}, {24, 24, 3}, 1, {2}, {}, {1, 1}),
      make("1-D, no attributes, kernel 1", {2, 5, 9}, {7, 5, 1}),
      make("1-D, dilation 3, uneven pads", {1, 6, 20}, {4, 6, 3}, 1, {1}, {3}, {2, 5}),
      make("1-D, pads wider than the kernel", {1, 3, 4}, {2, 3, 2}, 1, {1}, {}, {4, 3}),
      make("1-D, long enough for two row blocks", {1, 4, 5000}, {8, 4, 3}, 1, {}, {}, {1, 1}),
      make("1-D, grouped", {2, 8, 17}, {6, 4, 3}, 2, {2}, {}, {1, 0}),
      make("2-D, 3x3 pad 1", {1, 5, 9, 8}, {7, 5, 3, 3}, 1, {}, {}, {1, 1, 1, 1}),
      make("2-D, strides, dilations, uneven pads, group 2", {2, 6, 9, 7}, {4, 3, 3, 2}, 2, {2, 1}, {1, 2}, {1, 0, 2, 1}),
      make("2-D, depthwise", {1, 6, 7, 7}, {6, 1, 3, 3}, 6, {1, 1}, {}, {1, 1, 1, 1}),
      make("2-D, SAME_UPPER stride 2", {1, 3, 8, 9}, {5, 3, 3, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER"),
      make("2-D, SAME_LOWER", {1, 3, 6, 5}, {5, 3, 2, 2}, 1, {}, {}, {}, "SAME_LOWER"),
      make("2-D, VALID", {1, 3, 6, 5}, {5, 3, 3, 2}, 1, {}, {}, {}, "VALID"),
      make("2-D, output smaller than one stride", {1, 2, 3, 3}, {3, 2, 3, 3}, 1, {4, 4}),
      make("3-D", {1, 3, 5, 4, 6}, {4, 3, 2, 3, 2}, 1, {1, 2, 1}, {2, 1, 1}, {1, 0, 1, 0, 1, 1}),
      make("2-D, K 1152 (deep)", {1, 128, 6, 6}, {16, 128, 3, 3}, 1, {}, {}, {1, 1, 1, 1}),
  };
  ConvCase threaded = out[0];
  threaded.what = "1-D, two threads";
  threaded.x = {1, 80, 400};
  threaded.threads = 2;
  out.push_back(threaded);
  return out;
}

TEST(CpuConvInteger, IsBitExactOnEdgeShapes) {
  uint64_t seed = 1;
  int i = 0;
  for (ConvCase c : cases()) {
    // Every case under a different operand-type / zero-point combination, then the
    // Whisper-like cases under all of them.
    const DType types[2] = {DType::UInt8, DType::Int8};
    c.xt = types[i % 2];
    c.wt = types[(i / 2) % 2];
    c.zero_points = i % 3;
    check(c, seed);
    seed += 2;
    ++i;
  }
  for (int combo = 0; combo < 12; ++combo) {
    ConvCase c = cases()[1];
    const DType types[2] = {DType::UInt8, DType::Int8};
    c.xt = types[combo % 2];
    c.wt = types[(combo / 2) % 2];
    c.zero_points = combo / 4;
    check(c, seed);
    seed += 2;
  }
}

// What the kernel does not take runs the reference kernel, with the same result: a W that
// arrives at run time.
TEST(CpuConvInteger, RunTimeWeightRunsTheReference) {
  std::vector<std::optional<Operand>> ins = {Operand{rand_bytes(DType::UInt8, {1, 4, 9}, 3)},
                                             Operand{rand_bytes(DType::Int8, {5, 4, 3}, 4)}};
  auto g = testing::mm::one_node("ConvInteger", ins, {}, "", 17);
  Session fast = testing::mm::session(g, KernelChoice::Optimized, 1);
  Session ref = testing::mm::session(g, KernelChoice::Reference);
  const NamedTensors in = testing::mm::feeds(ins);
  const NamedTensors got = fast.run(in), want = ref.run(in);
  ASSERT_EQ(got.at(0).second.shape(), want.at(0).second.shape());
  EXPECT_EQ(std::memcmp(got.at(0).second.raw(), want.at(0).second.raw(), got.at(0).second.bytes()), 0);
}

}  // namespace
}  // namespace octet
