// Type and shape inference of Resize and BatchNormalization.
#include "ops_shape_test_util.h"

namespace octet::testing {
namespace {

const Dim batch = S("batch");

Attribute Mode(const std::string& m) { return Str("mode", m); }

TEST(VisionOps, ResizeWithSymbolicSizes) {
  // The interpolate_pos_encoding pattern: sizes from Shape math on a symbolic image.
  GraphBuilder b(14);
  b.input("pos", DType::Float32, DimVector{1, 384, 37, 37});
  b.input("img", DType::Float32, DimVector{batch, 3, S("h"), S("w")});
  b.ints("head", {1, 384});
  b.ints("idx_h", {2}, std::vector<int64_t>{});
  b.ints("idx_w", {3}, std::vector<int64_t>{});
  b.ints("patch", {14}, std::vector<int64_t>{});
  b.ints("zero", {0});
  b.node("Shape", {"img"}, {"shape"});
  b.node("Gather", {"shape", "idx_h"}, {"h"});
  b.node("Gather", {"shape", "idx_w"}, {"w"});
  b.node("Div", {"h", "patch"}, {"gh"});
  b.node("Div", {"w", "patch"}, {"gw"});
  b.node("Unsqueeze", {"gh", "zero"}, {"gh1"});
  b.node("Unsqueeze", {"gw", "zero"}, {"gw1"});
  b.node("Concat", {"head", "gh1", "gw1"}, {"sizes"}, {I("axis", 0)});
  b.node("Resize", {"pos", "", "", "sizes"}, {"y"}, {Mode("cubic")});
  b.infer();
  const DimVector y = b.dims("y");
  ASSERT_EQ(y.size(), 4u);
  EXPECT_EQ(y[0], Dim(1));
  EXPECT_EQ(y[1], Dim(384));
  EXPECT_EQ(y[2], Dim::floor_div(S("h"), Dim(14)));
  EXPECT_EQ(y[3], Dim::floor_div(S("w"), Dim(14)));
}

TEST(VisionOps, ResizeWithScales) {
  GraphBuilder b(19);
  b.input("x", DType::Float32, DimVector{batch, 3, S("h"), 10});
  b.floats("s2", {1, 1, 2, 0.5f}, {4});
  b.floats("s15", {1, 1, 1.5f, 1.5f}, {4});
  b.floats("s_axes", {3}, {1});
  b.node("Resize", {"x", "", "s2"}, {"a"}, {Mode("nearest")});
  b.node("Resize", {"x", "", "s15"}, {"b"}, {Mode("linear")});
  b.node("Resize", {"x", "", "s_axes"}, {"c"}, {Mode("linear"), Is("axes", {-1})});
  b.infer();
  EXPECT_EQ(b.dims("a"), (DimVector{batch, 3, S("h") * 2, 5}));
  const DimVector bb = b.dims("b");
  EXPECT_EQ(bb[3], Dim(15));
  EXPECT_FALSE(bb[2].is_constant());  // floor(h * 1.5): a fresh symbol
  EXPECT_EQ(b.dims("c"), (DimVector{batch, 3, S("h"), 30}));
}

TEST(VisionOps, ResizeOpsetLayoutsAndUnknowns) {
  GraphBuilder b10(10);
  b10.input("x", DType::Float32, DimVector{2, 4});
  b10.floats("s", {1, 2}, {2});
  b10.node("Resize", {"x", "s"}, {"y"}, {Mode("nearest")});
  b10.infer();
  EXPECT_EQ(b10.dims("y"), (DimVector{2, 8}));

  GraphBuilder b11(11);
  b11.input("x", DType::UInt8, DimVector{2, 4});
  b11.floats("roi", {}, {0});
  b11.floats("empty", {}, {0});
  b11.ints("sizes", {3, 3});
  b11.input("dyn", DType::Int64, DimVector{2});
  b11.node("Resize", {"x", "roi", "empty", "sizes"}, {"y"}, {Mode("linear")});
  b11.node("Resize", {"x", "roi", "empty", "dyn"}, {"z"}, {Mode("linear")});
  b11.infer();
  EXPECT_EQ(b11.type("y").dtype, DType::UInt8);
  EXPECT_EQ(b11.dims("y"), (DimVector{3, 3}));
  EXPECT_EQ(b11.dims("z").size(), 2u);  // sizes known only at run time: rank kept

  GraphBuilder k(18);
  k.input("x", DType::Float32, DimVector{1, 1, 4, 6});
  k.ints("sizes", {2, 2});
  k.node("Resize", {"x", "", "", "sizes"}, {"y"},
         {Mode("nearest"), Is("axes", {2, 3}), Str("keep_aspect_ratio_policy", "not_smaller")});
  k.infer();
  EXPECT_EQ(k.dims("y"), (DimVector{1, 1, 2, 3}));

  GraphBuilder u(19);
  u.input("x", DType::Float32, std::nullopt);
  u.floats("s", {2, 2}, {2});
  u.node("Resize", {"x", "", "s"}, {"y"}, {Mode("nearest")});
  u.infer();
  EXPECT_FALSE(u.type("y").has_rank());
}

TEST(VisionOps, ResizeErrorsNameTheNode) {
  auto error = [](int64_t opset, std::vector<Attribute> attrs, bool both = false, std::vector<float> s = {1, 2}) {
    GraphBuilder b(opset);
    b.input("x", DType::Float32, DimVector{2, 4});
    b.floats("s", s, {static_cast<int64_t>(s.size())});
    b.ints("sizes", {2, 8});
    b.node("Resize", {"x", "", "s", both ? "sizes" : ""}, {"y"}, std::move(attrs), "resize_node");
    return error_of([&] { b.infer(); });
  };
  EXPECT_TRUE(contains(error(19, {Mode("area")}), "node 'resize_node'"));
  EXPECT_TRUE(contains(error(19, {Mode("area")}), "mode 'area'"));
  EXPECT_TRUE(contains(error(19, {Mode("linear")}, true), "both scales and sizes"));
  EXPECT_TRUE(contains(error(19, {Mode("linear")}, false, {1, 2, 3}), "3 values"));
  EXPECT_TRUE(contains(error(19, {Mode("linear")}, false, {1, 0}), "positive"));
  EXPECT_TRUE(contains(error(13, {Mode("linear"), I("antialias", 1)}), "opset 18"));
  EXPECT_TRUE(contains(error(12, {Mode("cubic"), Str("coordinate_transformation_mode", "bogus")}), "bogus"));
  EXPECT_TRUE(contains(error(19, {Mode("nearest"), Str("nearest_mode", "up")}), "nearest_mode 'up'"));
  EXPECT_TRUE(contains(error(19, {Mode("linear"), Is("axes", {0, 0})}), "repeated"));
}

TEST(VisionOps, BatchNormalization) {
  GraphBuilder b(15);
  b.input("x", DType::Float32, DimVector{batch, S("c"), S("h"), 7});
  for (const char* p : {"s", "bias", "mean", "var"}) b.floats(p, {1, 1, 1, 1}, {4});
  b.node("BatchNormalization", {"x", "s", "bias", "mean", "var"}, {"y"});
  b.infer();
  EXPECT_EQ(b.dims("y"), (DimVector{batch, 4, S("h"), 7}));  // C learned from the parameters

  auto error = [](std::vector<Attribute> attrs, DimVector x, int outputs = 1) {
    GraphBuilder b(15);
    b.input("x", DType::Float32, x);
    for (const char* p : {"s", "bias", "mean", "var"}) b.floats(p, {1, 1}, {2});
    std::vector<std::string> outs = {"y"};
    if (outs.size() < static_cast<size_t>(outputs)) outs.insert(outs.end(), {"rm", "rv"});
    b.node("BatchNormalization", {"x", "s", "bias", "mean", "var"}, outs, std::move(attrs), "bn");
    return error_of([&] { b.infer(); });
  };
  EXPECT_TRUE(contains(error({I("training_mode", 1)}, {1, 2, 3}), "node 'bn'"));
  EXPECT_TRUE(contains(error({I("training_mode", 1)}, {1, 2, 3}), "training_mode=1"));
  EXPECT_TRUE(contains(error({}, {1, 2, 3}, 3), "inference only"));
  EXPECT_TRUE(contains(error({}, {1, 3, 3}), "does not match X's channels"));
  EXPECT_TRUE(contains(error({}, {3}), "rank >= 2"));
}

}  // namespace
}  // namespace octet::testing
