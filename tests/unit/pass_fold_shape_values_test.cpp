// Shape-value folding: known integer contents become initializers.
#include <gtest/gtest.h>

#include "onnx/model_io.h"
#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

// Exporters' head split: Reshape(x, Concat(Shape(x)[0], Shape(x)[1], 4, 16)).
std::shared_ptr<Graph> head_split() {
  PassGraph b;
  b.input("x", DType::Float32, {Dim::symbol("batch"), Dim::symbol("seq"), 64});
  b.init("i0", Tensor::scalar<int64_t>(0));
  b.init("i2", Tensor::scalar<int64_t>(2));
  b.init("axes", Tensor::from_vector<int64_t>({1}, {0}));
  b.init("heads", Tensor::from_vector<int64_t>({1}, {4}));
  b.init("minus1", Tensor::from_vector<int64_t>({1}, {-1}));
  b.node("Shape", {"x"}, {"shape"});
  b.node("Gather", {"shape", "i0"}, {"batch"}, {Attribute::make_int("axis", 0)});
  b.node("Gather", {"shape", "i2"}, {"hidden"}, {Attribute::make_int("axis", 0)});
  b.node("Unsqueeze", {"batch", "axes"}, {"batch1"});
  b.node("Unsqueeze", {"hidden", "axes"}, {"hidden1"});
  b.node("Div", {"hidden1", "heads"}, {"head_dim"});
  b.node("Concat", {"batch1", "minus1", "heads", "head_dim"}, {"new_shape"}, {Attribute::make_int("axis", 0)});
  b.node("Reshape", {"x", "new_shape"}, {"y"});
  b.output("y");
  return b.done();
}

TEST(FoldShapeValues, KnownDimsFoldWhileSymbolsStay) {
  auto g = testing::rewrite_and_compare(
      head_split, passes::fold_shape_values(),
      {{"x", testing::ramp(DType::Float32, {2, 3, 64})}}, 0.0);
  // head_dim = 64 / 4 is a known 16: the Div now reads... nothing; Concat reads a constant.
  const Node* concat = g->value("new_shape")->producer();
  ASSERT_NE(concat, nullptr);
  const Value* head_dim = concat->input(3);
  ASSERT_TRUE(head_dim->is_initializer());
  EXPECT_EQ(head_dim->constant()->to_int64_vector(), (std::vector<int64_t>{16}));
  // batch is symbolic: its Gather still runs.
  EXPECT_FALSE(concat->input(0)->is_initializer());
  EXPECT_EQ(concat->input(0)->producer()->op_type(), "Unsqueeze");
  // After dead-code removal the hidden-size branch is gone.
  run_pass(*g, passes::eliminate_dead_code());
  EXPECT_EQ(count_ops(*g, "Div"), 0);
  EXPECT_EQ(count_ops(*g, "Gather"), 1);
}

TEST(FoldShapeValues, NarrowIntegerTypesKeepTheirBits) {
  PassGraph b;
  b.input("x", DType::Float32, {3, 5});
  b.node("Shape", {"x"}, {"shape"});
  b.node("Cast", {"shape"}, {"shape32"}, {Attribute::make_int("to", 6)});  // int32
  b.node("Cast", {"shape32"}, {"shape64"}, {Attribute::make_int("to", 7)});
  b.node("Reshape", {"x", "shape64"}, {"y"});
  b.output("y");
  auto g = b.done();
  run_pass(*g, passes::fold_shape_values());
  const Value* s32 = g->value("y")->producer()->input(1);
  ASSERT_TRUE(s32->is_initializer());
  EXPECT_EQ(s32->constant()->to_int64_vector(), (std::vector<int64_t>{3, 5}));
  auto out = testing::run_graph(g, {{"x", testing::ramp(DType::Float32, {3, 5})}});
  EXPECT_EQ(out[0].second.shape(), (std::vector<int64_t>{3, 5}));
}

TEST(FoldShapeValues, ExporterFixtureWithAnonymousDims) {
  Model m = load_model(std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/unk_constantofshape.onnx");
  std::shared_ptr<Graph> g(std::move(m.graph));
  OptimizeReport r = run_pass(*g, passes::fold_shape_values());
  EXPECT_GE(r.passes[0].rewrites, 1);
  // The batch dim is a literal 1 (Shape(x)[0]); seq stays symbolic, so ConstantOfShape runs.
  EXPECT_EQ(count_ops(*g, "ConstantOfShape"), 1);
  for (int64_t seq : {2, 6}) {
    auto out = testing::run_graph(g, {{"x", testing::ramp(DType::Float32, {1, seq})}});
    EXPECT_EQ(out[0].second.shape(), (std::vector<int64_t>{1, seq}));
  }
}

}  // namespace
}  // namespace octet
