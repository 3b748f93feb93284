// Transposes that only move size-1 axes become Reshapes (views); real transposes stay.
#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

std::shared_ptr<Graph> transpose_graph(const std::vector<Dim>& in, std::vector<int64_t> perm) {
  PassGraph b;
  b.input("x", DType::Float32, in);
  std::vector<Attribute> attrs;
  if (!perm.empty()) attrs.push_back(Attribute::make_ints("perm", std::move(perm)));
  b.node("Transpose", {"x"}, {"t"}, attrs);
  b.node("Neg", {"t"}, {"y"});
  b.output("y");
  return b.done();
}

TEST(TransposeToReshape, UnitAxesMovedBecomeAReshapeWithTheSameResult) {
  // [1, 5, 3] -> [5, 1, 3] (nn.MultiheadAttention's batch-1 seq-first swap), and a
  // rank-4 case moving two unit axes around the two real ones.
  const std::vector<std::pair<std::vector<Dim>, std::vector<int64_t>>> cases = {
      {{1, 5, 3}, {1, 0, 2}}, {{5, 1, 3}, {1, 0, 2}}, {{1, 4, 1, 6}, {2, 1, 0, 3}}, {{7, 1}, {}}};
  for (const auto& [dims, perm] : cases) {
    std::vector<int64_t> shape;
    for (const Dim& d : dims) shape.push_back(d.value());
    auto g = testing::rewrite_and_compare([&] { return transpose_graph(dims, perm); }, passes::transpose_to_reshape(),
                                          {{"x", testing::ramp(DType::Float32, shape)}}, 0.0);
    EXPECT_EQ(count_ops(*g, "Transpose"), 0);
    EXPECT_EQ(count_ops(*g, "Reshape"), 1);
  }
}

TEST(TransposeToReshape, RealTransposesAndUnknownDimsStay) {
  // Size-1 axis moved, but the two real axes swap too.
  auto swap = transpose_graph({1, 5, 3}, {0, 2, 1});
  EXPECT_EQ(run_pass(*swap, passes::transpose_to_reshape()).passes[0].rewrites, 0);
  // A symbolic dim could be anything but 1, so moving it past another is a real transpose.
  auto symbolic = transpose_graph({Dim::symbol("batch"), 5, 3}, {1, 0, 2});
  EXPECT_EQ(run_pass(*symbolic, passes::transpose_to_reshape()).passes[0].rewrites, 0);
  // Output shape not static: no Reshape target to write.
  auto open = transpose_graph({1, Dim::symbol("seq"), 3}, {1, 0, 2});
  EXPECT_EQ(run_pass(*open, passes::transpose_to_reshape()).passes[0].rewrites, 0);
  EXPECT_EQ(count_ops(*open, "Transpose"), 1);
}

TEST(TransposeToReshape, GraphOutputKeepsItsName) {
  PassGraph b;
  b.input("x", DType::Float32, {1, 4});
  b.node("Transpose", {"x"}, {"y"}, {Attribute::make_ints("perm", {1, 0})});
  b.output("y");
  auto g = b.done();
  run_pass(*g, passes::transpose_to_reshape());
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->outputs()[0]->name(), "y");
  EXPECT_EQ(g->outputs()[0]->producer()->op_type(), "Reshape");
}

}  // namespace
}  // namespace octet
