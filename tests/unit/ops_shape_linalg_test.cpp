// Type and shape inference of MatMul, Gemm, Conv, ConvTranspose and Einsum.
#include <gtest/gtest.h>

#include "ops_shape_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;

const Dim batch = S("batch"), seq = S("seq");

// Infers MatMul(a, b) and returns the output type (throws on an error).
TensorType matmul(std::optional<DimVector> a, std::optional<DimVector> b, DType tb = DType::Float32) {
  GraphBuilder g;
  g.input("a", DType::Float32, std::move(a));
  g.input("b", tb, std::move(b));
  g.node("MatMul", {"a", "b"}, {"y"}, {}, "mm");
  g.infer();
  return g.type("y");
}

TEST(LinalgOps, MatMulNumpySemantics) {
  EXPECT_EQ(matmul(DimVector{batch, 12, seq, 64}, DimVector{batch, 12, 64, seq}).dims,
            (DimVector{batch, 12, seq, seq}));
  EXPECT_EQ(matmul(DimVector{batch, seq, 768}, DimVector{768, 3072}).dims, (DimVector{batch, seq, 3072}));
  EXPECT_EQ(matmul(DimVector{4}, DimVector{4, 5}).dims, DimVector{5});
  EXPECT_EQ(matmul(DimVector{3, 4}, DimVector{4}).dims, DimVector{3});
  EXPECT_EQ(matmul(DimVector{4}, DimVector{4}).dims, DimVector{});
  EXPECT_EQ(matmul(DimVector{batch, 4}, DimVector{2, 4, 5}).dims, (DimVector{2, batch, 5}));
  EXPECT_EQ(matmul(DimVector{2, 1, 3, 4}, DimVector{5, 4, 6}).dims, (DimVector{2, 5, 3, 6}));
  EXPECT_EQ(matmul(DimVector{1, seq, 4}, DimVector{batch, 4, 2}).dims, (DimVector{batch, seq, 2}));
  // A symbolic inner dim against a known one is fine: the model says they are equal.
  EXPECT_EQ(matmul(DimVector{seq, S("k")}, DimVector{64, 8}).dims, (DimVector{seq, 8}));
  EXPECT_EQ(matmul(DimVector{seq, 4}, DimVector{4, 8}).dtype, DType::Float32);
}

TEST(LinalgOps, MatMulErrorsNameTheNode) {
  std::string msg = error_of([] { matmul(DimVector{2, 3}, DimVector{4, 5}); });
  EXPECT_TRUE(contains(msg, "node 'mm' (MatMul)")) << msg;
  EXPECT_TRUE(contains(msg, "3 vs 4")) << msg;
  msg = error_of([] { matmul(DimVector{2, 3, 4}, DimVector{5, 4, 6}); });
  EXPECT_TRUE(contains(msg, "broadcast")) << msg;
  msg = error_of([] { matmul(DimVector{3, 4}, DimVector{4, 5}, DType::Float16); });
  EXPECT_TRUE(contains(msg, "float16")) << msg;
  msg = error_of([] { matmul(DimVector{}, DimVector{4, 5}); });
  EXPECT_TRUE(contains(msg, "rank")) << msg;
}

TEST(LinalgOps, MatMulWithUnknownRank) {
  TensorType t = matmul(std::nullopt, DimVector{4, 5});
  EXPECT_EQ(t.dtype, DType::Float32);
  EXPECT_FALSE(t.has_rank());
}

TEST(LinalgOps, GemmTransposesAndChecksC) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{batch, 64});
  b.input("w", DType::Float32, DimVector{192, 64});
  b.input("bias", DType::Float32, DimVector{192});
  b.input("wt", DType::Float32, DimVector{64, 10});
  b.node("Gemm", {"x", "w", "bias"}, {"y"}, {I("transB", 1)});
  b.node("Gemm", {"x", "wt"}, {"z"});
  b.node("Gemm", {"wt", "x"}, {"t"}, {I("transA", 1), I("transB", 1)});
  b.infer();
  EXPECT_EQ(b.type("y"), TensorType(DType::Float32, DimVector{batch, 192}));
  EXPECT_EQ(b.dims("z"), (DimVector{batch, 10}));
  EXPECT_EQ(b.dims("t"), (DimVector{10, batch}));

  GraphBuilder scalar_c;
  scalar_c.input("x", DType::Float32, DimVector{batch, 64});
  scalar_c.input("w", DType::Float32, DimVector{64, 10});
  scalar_c.input("c", DType::Float32, DimVector{1});
  scalar_c.node("Gemm", {"x", "w", "c"}, {"y"});
  scalar_c.infer();
  EXPECT_EQ(scalar_c.dims("y"), (DimVector{batch, 10}));

  GraphBuilder k;
  k.input("x", DType::Float32, DimVector{batch, 64});
  k.input("w", DType::Float32, DimVector{192, 64});
  k.node("Gemm", {"x", "w"}, {"y"}, {}, "gemm_k");
  std::string msg = error_of([&] { k.infer(); });
  EXPECT_TRUE(contains(msg, "node 'gemm_k' (Gemm)")) << msg;

  GraphBuilder c;
  c.input("x", DType::Float32, DimVector{batch, 64});
  c.input("w", DType::Float32, DimVector{64, 10});
  c.input("bias", DType::Float32, DimVector{7});
  c.node("Gemm", {"x", "w", "bias"}, {"y"}, {}, "gemm_c");
  EXPECT_TRUE(contains(error_of([&] { c.infer(); }), "broadcast"));

  GraphBuilder rank;
  rank.input("x", DType::Float32, DimVector{batch, seq, 64});
  rank.input("w", DType::Float32, DimVector{64, 10});
  rank.node("Gemm", {"x", "w"}, {"y"}, {}, "gemm_rank");
  EXPECT_TRUE(contains(error_of([&] { rank.infer(); }), "rank 2"));
}

// ------------------------------------------------------------------ Conv

DimVector conv(DimVector x, DimVector w, std::vector<Attribute> attrs) {
  GraphBuilder b;
  b.input("x", DType::Float32, std::move(x));
  b.input("w", DType::Float32, std::move(w));
  b.node("Conv", {"x", "w"}, {"y"}, std::move(attrs), "conv");
  b.infer();
  return b.dims("y");
}

TEST(LinalgOps, ConvViTPatchify) {
  GraphBuilder b;
  b.input("pixels", DType::Float32, DimVector{batch, 3, 224, 224});
  b.input("w", DType::Float32, DimVector{64, 3, 16, 16});
  b.input("bias", DType::Float32, DimVector{64});
  b.node("Conv", {"pixels", "w", "bias"}, {"patches"}, {Is("kernel_shape", {16, 16}), Is("strides", {16, 16})});
  b.infer();
  EXPECT_EQ(b.type("patches"), TensorType(DType::Float32, DimVector{batch, 64, 14, 14}));
}

TEST(LinalgOps, ConvSymbolicSpatialDimsStaySymbolic) {
  const Dim h = S("h"), w = S("w");
  // 3x3, pad 1, stride 1: same size.
  EXPECT_EQ(conv({batch, 3, h, w}, {8, 3, 3, 3}, {Is("pads", {1, 1, 1, 1})}), (DimVector{batch, 8, h, w}));
  // stride 2: floor((h + 2 - 3) / 2) + 1.
  DimVector s2 = conv({batch, 3, h, w}, {8, 3, 3, 3}, {Is("pads", {1, 1, 1, 1}), Is("strides", {2, 2})});
  EXPECT_EQ(s2[2], Dim::floor_div(h - 1, 2) + 1);
  EXPECT_EQ(s2[2].evaluate({{"h", 7}}), 4);
  EXPECT_EQ(s2[2].evaluate({{"h", 8}}), 4);
  // SAME_UPPER: ceil(h / stride); VALID: no padding.
  DimVector same = conv({1, 3, h, 10}, {8, 3, 3, 3}, {Str("auto_pad", "SAME_UPPER"), Is("strides", {2, 2})});
  EXPECT_EQ(same[2], Dim::floor_div(h + 1, 2));
  EXPECT_EQ(same[3], Dim(5));
  DimVector valid = conv({1, 3, h, 10}, {8, 3, 3, 3}, {Str("auto_pad", "VALID")});
  EXPECT_EQ(valid[2], h - 2);
  EXPECT_EQ(valid[3], Dim(8));
  // Dilation 2 widens a 3-tap kernel to 5.
  EXPECT_EQ(conv({1, 3, 10, 10}, {8, 3, 3, 3}, {Is("dilations", {2, 2})})[2], Dim(6));
}

TEST(LinalgOps, Conv1DAnd3DAndGroups) {
  EXPECT_EQ(conv({batch, 16, seq}, {32, 16, 5}, {Is("pads", {2, 2})}), (DimVector{batch, 32, seq}));
  EXPECT_EQ(conv({1, 4, 8, 8, 8}, {6, 4, 2, 2, 2}, {Is("strides", {2, 2, 2})}), (DimVector{1, 6, 4, 4, 4}));
  // Depthwise: group = channels, W has one input channel per group.
  EXPECT_EQ(conv({1, 32, 10, 10}, {32, 1, 3, 3}, {I("group", 32), Is("pads", {1, 1, 1, 1})}),
            (DimVector{1, 32, 10, 10}));
}

TEST(LinalgOps, ConvErrors) {
  std::string msg = error_of([] { conv({1, 3, 10, 10}, {8, 4, 3, 3}, {}); });
  EXPECT_TRUE(contains(msg, "node 'conv' (Conv)")) << msg;
  EXPECT_TRUE(contains(msg, "channels")) << msg;
  msg = error_of([] { conv({1, 4, 10, 10}, {6, 1, 3, 3}, {I("group", 4)}); });
  EXPECT_TRUE(contains(msg, "group")) << msg;
  msg = error_of([] { conv({1, 3, 2, 2}, {8, 3, 3, 3}, {}); });
  EXPECT_TRUE(contains(msg, "too small")) << msg;
  msg = error_of([] { conv({1, 3, 10, 10}, {8, 3, 3, 3}, {Is("strides", {1})}); });
  EXPECT_TRUE(contains(msg, "strides")) << msg;
  msg = error_of([] { conv({1, 3, 10, 10}, {8, 3, 3, 3}, {Is("kernel_shape", {5, 5})}); });
  EXPECT_TRUE(contains(msg, "kernel_shape")) << msg;
  msg = error_of([] { conv({1, 3, 10}, {8, 3, 3, 3}, {}); });
  EXPECT_TRUE(contains(msg, "rank")) << msg;

  GraphBuilder bias;
  bias.input("x", DType::Float32, DimVector{1, 3, 10, 10});
  bias.input("w", DType::Float32, DimVector{8, 3, 3, 3});
  bias.input("b", DType::Float32, DimVector{6});
  bias.node("Conv", {"x", "w", "b"}, {"y"}, {}, "conv_bias");
  msg = error_of([&] { bias.infer(); });
  EXPECT_TRUE(contains(msg, "node 'conv_bias'")) << msg;
  EXPECT_TRUE(contains(msg, "bias")) << msg;
}

TEST(LinalgOps, ConvWithUnknowns) {
  GraphBuilder b;
  b.input("x", DType::Float32, std::nullopt);
  b.input("w", DType::Float32, DimVector{8, 3, 3, 3});
  b.input("u", DType::Float32, std::nullopt);
  b.node("Conv", {"x", "w"}, {"y"});
  b.node("Conv", {"u", "u"}, {"z"});
  b.infer();
  DimVector y = b.dims("y");
  ASSERT_EQ(y.size(), 4u);
  EXPECT_EQ(y[1], Dim(8));
  EXPECT_FALSE(b.type("z").has_rank());
}

TEST(LinalgOps, ConvTranspose) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{batch, 8, 5, S("w")});
  b.input("w", DType::Float32, DimVector{8, 4, 3, 3});
  b.node("ConvTranspose", {"x", "w"}, {"y"}, {Is("strides", {2, 2})});
  b.node("ConvTranspose", {"x", "w"}, {"yp"}, {Is("strides", {2, 2}), Is("output_padding", {1, 1}), Is("pads", {1, 1, 1, 1})});
  b.node("ConvTranspose", {"x", "w"}, {"g"}, {I("group", 2)});
  b.node("ConvTranspose", {"x", "w"}, {"same"}, {Is("strides", {2, 2}), Str("auto_pad", "SAME_UPPER")});
  b.node("ConvTranspose", {"x", "w"}, {"fixed"}, {Is("output_shape", {10, 12})});
  b.infer();
  EXPECT_EQ(b.dims("y"), (DimVector{batch, 4, 11, S("w") * 2 + 1}));
  EXPECT_EQ(b.dims("yp"), (DimVector{batch, 4, 10, S("w") * 2}));
  EXPECT_EQ(b.dims("g"), (DimVector{batch, 8, 7, S("w") + 2}));
  EXPECT_EQ(b.dims("same"), (DimVector{batch, 4, 10, S("w") * 2}));
  EXPECT_EQ(b.dims("fixed"), (DimVector{batch, 4, 10, 12}));

  GraphBuilder bad;
  bad.input("x", DType::Float32, DimVector{1, 3, 5, 5});
  bad.input("w", DType::Float32, DimVector{8, 4, 3, 3});
  bad.node("ConvTranspose", {"x", "w"}, {"y"}, {}, "deconv");
  EXPECT_TRUE(contains(error_of([&] { bad.infer(); }), "node 'deconv'"));
}

// ------------------------------------------------------------------ Einsum

TensorType einsum(const std::string& eq, std::vector<std::optional<DimVector>> inputs) {
  GraphBuilder b;
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    names.push_back("in" + std::to_string(i));
    b.input(names.back(), DType::Float32, inputs[i]);
  }
  b.node("Einsum", names, {"y"}, {Str("equation", eq)}, "einsum");
  b.infer();
  return b.type("y");
}

TEST(LinalgOps, EinsumExplicitAndImplicit) {
  EXPECT_EQ(einsum("bhqd,bhkd->bhqk", {DimVector{batch, 12, seq, 64}, DimVector{batch, 12, S("kv"), 64}}).dims,
            (DimVector{batch, 12, seq, S("kv")}));
  EXPECT_EQ(einsum("ij,jk", {DimVector{3, 4}, DimVector{4, 5}}).dims, (DimVector{3, 5}));
  EXPECT_EQ(einsum("ba", {DimVector{3, 4}}).dims, (DimVector{4, 3}));  // implicit: alphabetical
  EXPECT_EQ(einsum("ii->i", {DimVector{5, 5}}).dims, DimVector{5});
  EXPECT_EQ(einsum("ij->", {DimVector{5, 6}}).dims, DimVector{});
  EXPECT_EQ(einsum(" i j , j k -> k i ", {DimVector{3, 4}, DimVector{4, 5}}).dims, (DimVector{5, 3}));
}

TEST(LinalgOps, EinsumEllipsisBroadcasts) {
  EXPECT_EQ(einsum("...ij,...jk->...ik", {DimVector{batch, 1, 3, 4}, DimVector{12, 4, 5}}).dims,
            (DimVector{batch, 12, 3, 5}));
  EXPECT_EQ(einsum("...ij,jk", {DimVector{batch, seq, 3, 4}, DimVector{4, 5}}).dims,
            (DimVector{batch, seq, 3, 5}));
  EXPECT_EQ(einsum("i...->...", {DimVector{3}}).dims, DimVector{});
  EXPECT_FALSE(einsum("...ij->...ji", {std::nullopt}).has_rank());
}

TEST(LinalgOps, EinsumErrors) {
  std::string msg = error_of([] { einsum("ij,jk->ik", {DimVector{3, 4}, DimVector{5, 6}}); });
  EXPECT_TRUE(contains(msg, "node 'einsum' (Einsum)")) << msg;
  EXPECT_TRUE(contains(msg, "'j'")) << msg;
  EXPECT_TRUE(contains(error_of([] { einsum("ij->ik", {DimVector{3, 4}}); }), "'k'"));
  EXPECT_TRUE(contains(error_of([] { einsum("ij,jk->ik", {DimVector{3, 4}}); }), "operands"));
  EXPECT_TRUE(contains(error_of([] { einsum("ijk->i", {DimVector{3, 4}}); }), "does not fit"));
  EXPECT_TRUE(contains(error_of([] { einsum("i.j->i", {DimVector{3, 4}}); }), "ellipsis"));
  EXPECT_TRUE(contains(error_of([] { einsum("ij->ii", {DimVector{3, 4}}); }), "repeated"));
}

TEST(LinalgOps, EinsumWithUnknownRankOperand) {
  TensorType t = einsum("ij,jk->ik", {std::nullopt, DimVector{4, 5}});
  ASSERT_TRUE(t.has_rank());
  EXPECT_FALSE((*t.dims)[0].is_constant());
  EXPECT_EQ((*t.dims)[1], Dim(5));
}

}  // namespace
}  // namespace octet
