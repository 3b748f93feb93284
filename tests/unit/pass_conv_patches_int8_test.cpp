// A quantized patch Conv (QDQ: Q/DQ on X, DQ of an int8 W) stays int8 through the
// optimizer: the patches are cut from Q(X)'s bytes and a static octet.QMatMul multiplies
// them by W_q's columns, matching the QDQ graph on the reference kernels; a Q/DQ on Y
// (and its re-quantization after the flatten) becomes one Q/DQ on the tokens. Where
// octet.QMatMul's int8 kernel could not take the weight (a non-zero weight zero point) or
// the Conv is no patch Conv, the weight's DequantizeLinear is folded once at load as
// before, never left to run every time.
#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

struct Int8ConvCase {
  std::vector<int64_t> x;  // [N, C, H, W]
  std::vector<int64_t> w;  // [OC, C, k, k]
  int64_t stride = 0;      // 0: the kernel (a patch Conv)
  bool per_filter = true;  // per-filter weight scales (axis 0), else one
  int8_t w_zero = 0;
  bool tokens = true;      // the ViT tail, else Relu reads Y as NCHW
  bool int8_x = false;     // X quantized to int8 (zero point -8), else uint8
  bool quantized_y = false;  // Q/DQ after the Conv and after the flatten, as onnxruntime writes
  bool symbolic_batch = false;  // X's batch a symbol, the flatten's target from Shape(Y) (torch)
};

// x -> Q/DQ -> Conv(DQ(W_q), b) -> Reshape [N, OC, -1] -> Transpose(0,2,1) -> y
std::shared_ptr<Graph> int8_conv_graph(const Int8ConvCase& c) {
  PassGraph b;
  DimVector x_dims(c.x.begin(), c.x.end());
  if (c.symbolic_batch) x_dims[0] = Dim::symbol("batch");
  b.input("x", DType::Float32, x_dims);
  b.init("x_scale", Tensor::from_vector<float>({}, {0.02f}));
  b.init("x_zero", c.int8_x ? Tensor::from_vector<int8_t>({}, {-8}) : Tensor::from_vector<uint8_t>({}, {120}));
  b.node("QuantizeLinear", {"x", "x_scale", "x_zero"}, {"xq"});
  b.node("DequantizeLinear", {"xq", "x_scale", "x_zero"}, {"xd"});
  Tensor wq(DType::Int8, c.w);
  for (int64_t i = 0; i < wq.numel(); ++i) wq.mutable_data<int8_t>()[i] = static_cast<int8_t>((i * 37) % 255 - 127);
  b.init("w_q", wq);
  const int64_t scales = c.per_filter ? c.w[0] : 1;
  std::vector<float> s;
  for (int64_t i = 0; i < scales; ++i) s.push_back(0.001f * static_cast<float>(1 + i % 7));
  b.init("w_scale", c.per_filter ? Tensor::from_vector<float>({scales}, s) : Tensor::from_vector<float>({}, s));
  b.init("w_zero", c.per_filter ? Tensor::from_vector<int8_t>({scales}, std::vector<int8_t>(scales, c.w_zero))
                                : Tensor::from_vector<int8_t>({}, {c.w_zero}));
  b.node("DequantizeLinear", {"w_q", "w_scale", "w_zero"}, {"w"},
         c.per_filter ? std::vector<Attribute>{Attribute::make_int("axis", 0)} : std::vector<Attribute>{});
  b.init("b", testing::ramp(DType::Float32, {c.w[0]}, 2));
  const std::vector<int64_t> kernel(c.w.begin() + 2, c.w.end());
  const int64_t stride = c.stride ? c.stride : kernel[0];
  b.node("Conv", {"xd", "w", "b"}, {"c"},
         {Attribute::make_ints("kernel_shape", kernel), Attribute::make_ints("strides", {stride, stride})});
  if (c.quantized_y) {
    b.init("y_scale", Tensor::from_vector<float>({}, {0.05f}));
    b.init("y_zero", Tensor::from_vector<uint8_t>({}, {100}));
    b.node("QuantizeLinear", {"c", "y_scale", "y_zero"}, {"cq"});
    b.node("DequantizeLinear", {"cq", "y_scale", "y_zero"}, {"cd"});
  }
  if (c.tokens) {
    const std::string y = c.quantized_y ? "cd" : "c";
    if (c.symbolic_batch) {  // Shape(Y)[0:2] ++ [-1], as torch writes flatten(2)
      b.flatten2_target(y, "flat");
    } else {
      b.init("flat", Tensor::from_vector<int64_t>({3}, {0, c.w[0], -1}));
    }
    b.node("Reshape", {y, "flat"}, {"f"});
    if (c.quantized_y) {
      b.node("QuantizeLinear", {"f", "y_scale", "y_zero"}, {"fq"});
      b.node("DequantizeLinear", {"fq", "y_scale", "y_zero"}, {"fd"});
    }
    b.node("Transpose", {c.quantized_y ? "fd" : "f"}, {"y"}, {Attribute::make_ints("perm", {0, 2, 1})});
  } else {
    b.node("Relu", {"c"}, {"y"});
  }
  b.output("y");
  return b.done();
}

// Optimizes at level 2 and checks the result against the QDQ graph on the reference
// kernels; returns the optimized graph.
std::shared_ptr<Graph> optimize_and_compare(const Int8ConvCase& c) {
  std::shared_ptr<Graph> g = int8_conv_graph(c);
  OptimizeOptions opts;
  opts.verify = true;
  optimize(*g, opts);
  const NamedTensors in = {{"x", testing::ramp(DType::Float32, c.x, 3, 2.0f)}};
  SessionOptions ref;
  ref.kernels = KernelChoice::Reference;
  const NamedTensors want = Session(int8_conv_graph(c), ref).run(in);
  // Exact int32 sums against float sums of the dequantized products: rounding only.
  EXPECT_LE(testing::max_relative_error(Session(g).run(in), want), 1e-5);
  EXPECT_LE(testing::max_relative_error(testing::run_graph_with(g, in, KernelChoice::Reference), want), 1e-5);
  return g;
}

TEST(ConvPatchesInt8, QdqPatchConvBecomesAStaticQMatMul) {
  // ViT-like (K = 3 * 4 * 4 = 48), per-filter scales, batch 2; a 14x14-like odd K = 3 * 3 * 3
  // per tensor; an int8 X.
  Int8ConvCase signed_x{{1, 3, 8, 8}, {16, 3, 2, 2}};
  signed_x.int8_x = true;
  for (const Int8ConvCase& c :
       {Int8ConvCase{{2, 3, 12, 20}, {24, 3, 4, 4}}, Int8ConvCase{{1, 3, 9, 6}, {17, 3, 3, 3}, 0, false}, signed_x}) {
    SCOPED_TRACE(c.per_filter ? (c.int8_x ? "int8 x" : "per filter") : "per tensor");
    std::shared_ptr<Graph> g = optimize_and_compare(c);
    EXPECT_EQ(count_ops(*g, "Conv"), 0);
    EXPECT_EQ(count_ops(*g, "QMatMul", "octet"), 1);
    EXPECT_EQ(count_ops(*g, "MatMulBias", "octet"), 0);
    EXPECT_EQ(count_ops(*g, "QuantizeLinear"), 1);  // X's: the patches are cut from its bytes
    EXPECT_EQ(count_ops(*g, "DequantizeLinear"), 0);
  }
}

// onnxruntime's QDQ quantizer also quantizes the Conv's output and re-quantizes it with the
// same parameters after the flatten: one Q/DQ on the tokens says the same.
TEST(ConvPatchesInt8, QuantizedOutputAndItsRequantizationGoToTheTokens) {
  Int8ConvCase c{{2, 3, 12, 20}, {24, 3, 4, 4}};
  c.quantized_y = true;
  std::shared_ptr<Graph> g = optimize_and_compare(c);
  EXPECT_EQ(count_ops(*g, "Conv"), 0);
  EXPECT_EQ(count_ops(*g, "QMatMul", "octet"), 1);
  EXPECT_EQ(count_ops(*g, "QuantizeLinear"), 2);  // X's and the tokens'
  EXPECT_EQ(count_ops(*g, "DequantizeLinear"), 1);
}

// torch's flatten at a symbolic batch reads Shape(Y): rebuilt from X's shape, which needs no
// DequantizeLinear of X left running for it (the shape folding reads through it).
TEST(ConvPatchesInt8, SymbolicBatchShapeComesFromTheFloatInput) {
  for (bool quantized_y : {false, true}) {
    Int8ConvCase c{{2, 3, 8, 12}, {8, 3, 4, 4}};
    c.symbolic_batch = true;
    c.quantized_y = quantized_y;
    std::shared_ptr<Graph> g = int8_conv_graph(c);
    OptimizeOptions opts;
    opts.verify = true;
    optimize(*g, opts);
    EXPECT_EQ(count_ops(*g, "Conv"), 0);
    EXPECT_EQ(count_ops(*g, "QMatMul", "octet"), 1);
    EXPECT_EQ(count_ops(*g, "DequantizeLinear"), quantized_y ? 1 : 0);
    for (int64_t batch : {1, 3}) {
      const NamedTensors in = {{"x", testing::ramp(DType::Float32, {batch, 3, 8, 12}, 3, 2.0f)}};
      SessionOptions ref;
      ref.kernels = KernelChoice::Reference;
      EXPECT_LE(testing::max_relative_error(Session(g).run(in), Session(int8_conv_graph(c), ref).run(in)), 1e-5)
          << "batch " << batch << (quantized_y ? ", quantized Y" : "");
    }
  }
}

TEST(ConvPatchesInt8, OtherQuantizedConvsFoldTheirWeightsAsBefore) {
  // A weight zero point the int8 kernel cannot take: the float patch MatMul, W folded.
  Int8ConvCase zero{{1, 3, 8, 8}, {8, 3, 2, 2}};
  zero.w_zero = 3;
  std::shared_ptr<Graph> g = optimize_and_compare(zero);
  EXPECT_EQ(count_ops(*g, "QMatMul", "octet"), 0);
  EXPECT_EQ(count_ops(*g, "MatMulBias", "octet"), 1);
  EXPECT_EQ(count_ops(*g, "DequantizeLinear"), 1);  // X's; W's was folded
  // Not a patch Conv (stride 1), and a patch Conv read as NCHW: Convs on a folded W.
  for (const Int8ConvCase& c :
       {Int8ConvCase{{1, 3, 8, 8}, {8, 3, 3, 3}, 1}, Int8ConvCase{{1, 3, 8, 8}, {8, 3, 2, 2}, 0, true, 0, false}}) {
    std::shared_ptr<Graph> conv = optimize_and_compare(c);
    EXPECT_EQ(count_ops(*conv, "Conv"), 1);
    EXPECT_EQ(count_ops(*conv, "DequantizeLinear"), 1);
  }
}

}  // namespace
}  // namespace octet
