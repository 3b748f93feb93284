// The oneDNN Conv kernel (src/kernels/cpu/dnnl_conv*) against the reference Conv: 1-D,
// 2-D and 3-D, ragged channel counts, kernels 1/3/16, strides, dilations, explicit and
// automatic pads, groups up to depthwise, batch 1 and 3, with and without bias; the nodes
// it declines; the per-shape primitive cache; two threads on one Session; and every ISA
// level (oneDNN fixes its ISA per process, so each level runs these tests again in a
// child process with OCTET_ISA set).
#include <gtest/gtest.h>

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

struct ConvCase {
  std::vector<int64_t> x, w;  // X [N, C, D...], W [M, C/group, k...]
  std::vector<Attribute> attrs = {};
  bool bias = true;
  std::string label = "";
};

// Runs the case on the optimized and the reference kernels; returns how many nodes ran
// an optimized kernel.
int check(const ConvCase& c, bool constant_w = true, uint64_t seed = 1) {
  std::vector<std::optional<Operand>> ins = {Operand{rand(c.x, seed)}, Operand{rand(c.w, seed + 1), constant_w}};
  if (c.bias) ins.push_back(Operand{rand({c.w[0]}, seed + 2), true});
  int64_t k = 1;
  for (size_t i = 1; i < c.w.size(); ++i) k *= c.w[i];
  std::ostringstream what;
  what << "X " << shape_str(c.x) << " W " << shape_str(c.w) << (c.bias ? " bias " : " ") << c.label;
  const int optimized = testing::mm::check_against_reference("Conv", ins, c.attrs, k + 1, what.str());
  if (optimized == 1) {
    // Taking the node is not enough: the run must not have fallen back either.
    testing::mm::DirectKernel kernel(testing::mm::one_node("Conv", ins, c.attrs));
    std::vector<const Tensor*> inputs;
    for (const auto& in : ins) inputs.push_back(&in->value);
    kernel.run(inputs);
    EXPECT_EQ(static_cast<const dnnl_cpu::ConvState&>(*kernel.state).reference_runs(), 0) << what.str();
  }
  return optimized;
}

std::vector<Attribute> geometry(std::vector<int64_t> strides, std::vector<int64_t> dilations = {},
                                std::vector<int64_t> pads = {}, int64_t group = 1) {
  std::vector<Attribute> a = {Attribute::make_ints("strides", std::move(strides)), Attribute::make_int("group", group)};
  if (!dilations.empty()) a.push_back(Attribute::make_ints("dilations", std::move(dilations)));
  if (!pads.empty()) a.push_back(Attribute::make_ints("pads", std::move(pads)));
  return a;
}

TEST(CpuConv, TwoDRaggedChannelsKernelsAndStrides) {
  uint64_t seed = 1;
  for (int64_t c : {1, 3, 5, 17})
    for (int64_t m : {1, 5, 17})
      for (auto [k, s] : {std::pair<int64_t, int64_t>{1, 1}, {3, 1}, {3, 2}, {16, 16}})
        for (int64_t batch : {1, 3}) {
          const int64_t size = k == 16 ? 35 : 9;  // 35: the last patch row is cut off
          ConvCase cc{{batch, c, size, size + 2}, {m, c, k, k}, geometry({s, s}), (c + m) % 2 == 0};
          EXPECT_EQ(check(cc, true, seed++), 1) << shape_str(cc.x) << shape_str(cc.w);
        }
}

TEST(CpuConv, OneD) {
  for (int64_t c : {1, 3, 17})
    for (auto [k, s, d] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {3, 1, 1}, {3, 2, 2}, {16, 16, 1}})
      for (bool bias : {false, true}) {
        ConvCase cc{{3, c, 67}, {5, c, k}, geometry({s}, {d}, {1, 2}), bias};
        EXPECT_EQ(check(cc), 1) << shape_str(cc.w) << " stride " << s << " dilation " << d;
      }
}

TEST(CpuConv, ThreeD) {
  EXPECT_EQ(check({{2, 3, 6, 7, 8}, {4, 3, 3, 3, 3}, geometry({1, 2, 1}, {1, 1, 2}, {1, 0, 1, 1, 1, 0})}), 1);
  EXPECT_EQ(check({{1, 5, 4, 4, 4}, {5, 1, 1, 3, 3}, geometry({1, 1, 1}, {}, {0, 1, 1, 0, 1, 1}, 5), false}), 1);
}

TEST(CpuConv, DilationsAndExplicitPads) {
  const std::vector<std::vector<int64_t>> pads = {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 0, 0, 3}, {0, 3, 2, 1},
                                                  {4, 4, 4, 4}};  // 4: past what stride 2 reaches
  for (const auto& p : pads)
    for (int64_t d : {1, 2, 3})
      for (int64_t s : {1, 2}) {
        ConvCase cc{{1, 5, 11, 12}, {3, 5, 3, 3}, geometry({s, s}, {d, d}, p)};
        EXPECT_EQ(check(cc), 1) << "pads " << shape_str(p) << " dilation " << d << " stride " << s;
      }
}

TEST(CpuConv, AutoPadVariants) {
  for (const char* mode : {"VALID", "SAME_UPPER", "SAME_LOWER", "NOTSET"})
    for (int64_t s : {1, 2, 3})
      for (int64_t k : {1, 2, 3, 4}) {
        ConvCase cc{{1, 3, 10, 13}, {4, 3, k, k}, geometry({s, s}), true, std::string("auto_pad ") + mode};
        cc.attrs.push_back(Attribute::make_string("auto_pad", mode));
        EXPECT_EQ(check(cc), 1) << mode << " kernel " << k << " stride " << s;
      }
  // 1-D with a dilation: the padding follows the dilated extent.
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    ConvCase cc{{2, 3, 20}, {2, 3, 3}, geometry({2}, {2}), false, mode};
    cc.attrs.push_back(Attribute::make_string("auto_pad", mode));
    EXPECT_EQ(check(cc), 1) << mode;
  }
}

TEST(CpuConv, GroupsAndDepthwise) {
  struct G {
    int64_t c, m, group;
  };
  for (G g : {G{4, 6, 2}, G{6, 3, 3}, G{15, 5, 5}, G{17, 17, 17}, G{16, 32, 16}, G{3, 6, 3}})
    for (int64_t batch : {1, 3}) {
      ConvCase cc{{batch, g.c, 9, 10}, {g.m, g.c / g.group, 3, 3}, geometry({1, 1}, {}, {1, 1, 1, 1}, g.group)};
      EXPECT_EQ(check(cc), 1) << "C " << g.c << " M " << g.m << " group " << g.group;
    }
  // Depthwise 1-D with stride 2 (the audio front ends' form).
  EXPECT_EQ(check({{1, 17, 50}, {17, 1, 5}, geometry({2}, {}, {2, 2}, 17)}), 1);
}

TEST(CpuConv, VitPatchEmbedding) {
  for (int64_t batch : {1, 3})
    EXPECT_EQ(check({{batch, 3, 224, 224}, {64, 3, 16, 16}, geometry({16, 16}, {1, 1}, {0, 0, 0, 0})}), 1);
}

TEST(CpuConv, DeclinedNodesRunTheReferenceKernel) {
  // Runtime weights: nothing to reorder at session creation.
  EXPECT_EQ(check({{1, 3, 9, 9}, {4, 3, 3, 3}, geometry({1, 1})}, /*constant_w=*/false), 0);
  // Other types.
  for (DType t : {DType::Float64, DType::Float16}) {
    Tensor x(t, {1, 2, 5, 5}), w(t, {3, 2, 3, 3});  // zeros: the node's routing is what matters
    auto g = testing::mm::one_node("Conv", {Operand{x}, Operand{w, true}});
    Session fast = testing::mm::session(g, KernelChoice::Optimized);
    EXPECT_EQ(fast.optimized_nodes(), 0) << dtype_name(t);
    Tensor got = fast.run({{"in0", x}})[0].second;
    Tensor want = testing::mm::session(g, KernelChoice::Reference).run({{"in0", x}})[0].second;
    EXPECT_EQ(got.to_float_vector(), want.to_float_vector()) << dtype_name(t);
  }
  // Four spatial dims: more than oneDNN's convolution takes.
  EXPECT_EQ(check({{1, 2, 4, 3, 4, 3}, {3, 2, 2, 2, 2, 2}, geometry({1, 1, 1, 1})}), 0);
}

TEST(CpuConv, RunTimeMismatchesGetTheReferenceError) {
  // The channel count is symbolic, so only the run sees that it does not fit W.
  Operand x{rand({1, 4, 6, 6}, 1), false, DimVector{1, Dim::symbol("c"), 6, 6}};
  auto g = testing::mm::one_node("Conv", {x, Operand{rand({2, 3, 3, 3}, 2), true}});
  Session s = testing::mm::session(g, KernelChoice::Optimized);
  EXPECT_EQ(s.optimized_nodes(), 1);
  try {
    s.run(testing::mm::feeds({x}));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("do not fit group"), std::string::npos) << e.what();
  }
}

TEST(CpuConv, PrimitivesAreCreatedOncePerShape) {
  Tensor w = rand({8, 3, 3, 3}, 1), b = rand({8}, 2);
  Operand x{rand({1, 3, 8, 8}, 3), false, DimVector{Dim::symbol("n"), 3, Dim::symbol("h"), Dim::symbol("w")}};
  testing::mm::DirectKernel kernel(testing::mm::one_node("Conv", {x, Operand{w, true}, Operand{b, true}}));
  const auto& state = static_cast<const dnnl_cpu::ConvState&>(*kernel.state);
  EXPECT_EQ(state.primitives_created(), 0);
  Tensor x8 = rand({1, 3, 8, 8}, 4), x9 = rand({2, 3, 9, 7}, 5);
  Tensor first = kernel.run({&x8, &w, &b}, 1);
  kernel.run({&x8, &w, &b}, 1);
  EXPECT_EQ(state.primitives_created(), 1);
  Tensor other = kernel.run({&x9, &w, &b}, 1);
  EXPECT_EQ(state.primitives_created(), 2);
  EXPECT_EQ(other.shape(), (std::vector<int64_t>{2, 8, 7, 5}));
  kernel.run({&x9, &w, &b}, 2);
  EXPECT_EQ(state.primitives_created(), 3);  // primitives are sized for their thread count
  EXPECT_EQ(state.reference_runs(), 0);
  for (const std::string& impl : state.implementations()) {
    EXPECT_EQ(impl.rfind("ref", 0), std::string::npos) << impl;
    std::cout << "[ impl     ] " << isa_name(dnnl_cpu::engine_isa()) << ": " << impl
              << (state.prepacked() ? " (W prepacked)" : " (W plain)") << "\n";
  }
  auto g = testing::mm::one_node("Conv", {Operand{x8}, Operand{w, true}, Operand{b, true}});
  Tensor want = testing::mm::session(g, KernelChoice::Reference).run({{"in0", x8}})[0].second;
  testing::mm::expect_close(first, want, 28, "cached primitive");
}

TEST(CpuConv, ConcurrentRunsOnOneSession) {
  // Symbolic batch and image size: each thread runs several shapes, so primitives are
  // created while the other thread runs.
  Operand x{rand({1, 3, 8, 8}, 1), false, DimVector{Dim::symbol("n"), 3, Dim::symbol("h"), Dim::symbol("w")}};
  auto g = testing::mm::one_node("Conv", {x, Operand{rand({16, 3, 4, 4}, 2), true}, Operand{rand({16}, 3), true}},
                                 geometry({2, 2}, {}, {1, 1, 1, 1}));
  Session fast = testing::mm::session(g, KernelChoice::Optimized, 2), ref = testing::mm::session(g, KernelChoice::Reference);
  std::vector<Tensor> inputs, want;
  for (int64_t size : {4, 9, 16, 33, 8})
    for (int64_t batch : {1, 3}) {
      inputs.push_back(rand({batch, 3, size, size + 1}, static_cast<uint64_t>(size * batch)));
      want.push_back(ref.run({{"in0", inputs.back()}})[0].second);
    }
  testing::mm::expect_concurrent_runs_match(fast, inputs, want, 5, 49);
}

// Each ISA level in a process of its own: the tests above again under OCTET_ISA=level.
TEST(CpuConvIsa, EveryLevelInAChildProcess) {
  testing::expect_child_runs_pass_at_every_isa("CpuConv.*", "cpu_conv_isa");
}

}  // namespace
}  // namespace octet
