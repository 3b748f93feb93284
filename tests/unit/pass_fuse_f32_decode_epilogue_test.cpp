// The float decoder's epilogues: fuse_matmul_epilogue folding the residual Add after a
// bias-free MatMul(A, W) into octet.MatMulBias(A, W, <no bias>, residual), and
// fuse_nbits_split turning a float MatMul(A, W) -> Split(last axis) into octet.MatMulBias
// with `split`. The fused graph computes what the original did, on the optimized kernels
// (the decode GEMV at M <= 4, writing panels straight into the parts or through a tile
// where a panel straddles two; oneDNN at prefill M, with the add post-op or copied parts)
// at every ISA level, 1 and 2 threads, and on the reference kernels; the near misses stay.
#include <gtest/gtest.h>

#include <cstring>

#include "cpu_test_util.h"
#include "kernels/dispatch/cpu_features.h"
#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

NamedTensors run_on(const std::shared_ptr<Graph>& g, const NamedTensors& in, int threads, KernelChoice k) {
  SessionOptions o;
  o.threads = threads;
  o.kernels = k;
  Session s(std::shared_ptr<const Graph>(g), o);
  if (k == KernelChoice::Optimized) {
    EXPECT_EQ(s.reference_ops().size(), 0u) << "a node fell back to the reference kernel";
  }
  return s.run(in);
}

// Fused against original at every ISA level and thread count, within `tol` (relative to the
// largest output), and on the reference kernels (there bit for bit: one definition).
void compare_everywhere(const std::shared_ptr<Graph>& fused, const std::shared_ptr<Graph>& original,
                        const NamedTensors& in, double tol) {
  for (IsaLevel level : available_isas())
    for (int threads : {1, 2}) {
      ScopedIsaLevel scoped(level);
      const double err = testing::max_relative_error(run_on(fused, in, threads, KernelChoice::Optimized),
                                                     run_on(original, in, threads, KernelChoice::Optimized));
      EXPECT_LE(err, tol) << isa_name(level) << " threads " << threads;
    }
  const NamedTensors got = run_on(fused, in, 1, KernelChoice::Reference);
  const NamedTensors want = run_on(original, in, 1, KernelChoice::Reference);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].second.shape(), want[i].second.shape()) << got[i].first;
    EXPECT_EQ(std::memcmp(got[i].second.raw(), want[i].second.raw(), want[i].second.bytes()), 0)
        << "reference kernels: " << got[i].first << " differs";
  }
}

// ---- residual ----

struct ResidualCase {
  int64_t rows = 1, K = 200, N = 130;
  std::vector<int64_t> residual_shape;  // empty: Y's shape [1, rows, N]
  bool sibling = false;                 // another MatMul with a constant W reads A
  bool runtime_w = false;               // W a graph input
  bool y_read_twice = false;            // Y also a graph output
};

std::shared_ptr<Graph> make_residual(const ResidualCase& c) {
  PassGraph b;
  b.input("a", DType::Float32, {Dim(1), Dim(c.rows), Dim(c.K)});
  const std::vector<int64_t> rs = c.residual_shape.empty() ? std::vector<int64_t>{1, c.rows, c.N} : c.residual_shape;
  DimVector rd;
  for (int64_t d : rs) rd.push_back(Dim(d));
  b.input("r", DType::Float32, rd);
  if (c.runtime_w) b.input("w", DType::Float32, {Dim(c.K), Dim(c.N)});
  else b.init("w", testing::random_f32({c.K, c.N}, 3, -0.5f, 0.5f));
  b.node("MatMul", {"a", "w"}, {"y"});
  b.node("Add", {"r", "y"}, {"out"});  // the residual first, as a skip connection often is
  b.output("out");
  if (c.sibling) {
    b.init("w2", testing::random_f32({c.K, 64}, 4));
    b.node("MatMul", {"a", "w2"}, {"y2"});
    b.output("y2");
  }
  if (c.y_read_twice) b.output("y");
  return b.done();
}

NamedTensors residual_inputs(const std::shared_ptr<Graph>& g) {
  NamedTensors in;
  uint32_t seed = 20;
  for (const Value* v : g->inputs()) {
    if (v->is_initializer()) continue;
    std::vector<int64_t> shape;
    for (const Dim& d : *v->type.dims) shape.push_back(*d.constant());
    in.emplace_back(v->name(), testing::random_f32(shape, seed++));
  }
  return in;
}

TEST(FuseF32DecodeEpilogue, ResidualFoldsIntoBiasFreeMatMul) {
  // rows 1..4: the decode GEMV (N one short of / past a panel); 8 and 128: oneDNN's add post-op.
  for (int64_t rows : {1, 3, 4, 8, 128})
    for (int64_t n : {63, 130, 576}) {
      ResidualCase c;
      c.rows = rows, c.N = n, c.K = rows == 128 ? 576 : 200;
      SCOPED_TRACE("rows " + std::to_string(rows) + " N " + std::to_string(n));
      auto fused = make_residual(c);
      run_pass(*fused, passes::fuse_matmul_epilogue());
      EXPECT_TRUE(verify_graph(*fused).empty());
      ASSERT_EQ(fused->node_count(), 1u);
      const Node* node = fused->nodes()[0];
      EXPECT_EQ(node->domain(), "octet");
      EXPECT_EQ(node->op_type(), "MatMulBias");
      EXPECT_EQ(node->input(2), nullptr) << "no bias";
      ASSERT_NE(node->input(3), nullptr) << "the residual";
      compare_everywhere(fused, make_residual(c), residual_inputs(fused), 1e-6);
    }
}

TEST(FuseF32DecodeEpilogue, ResidualNearMissesStay) {
  auto untouched = [](const ResidualCase& c, const std::string& what) {
    SCOPED_TRACE(what);
    testing::expect_pass_leaves_alone(*make_residual(c), passes::fuse_matmul_epilogue(), "MatMulBias", "octet");
  };
  ResidualCase c;
  c.sibling = true;
  untouched(c, "a sibling MatMul reads A (merge_sibling_matmuls' candidate)");
  c = ResidualCase{};
  c.runtime_w = true;
  untouched(c, "W not a constant");
  c = ResidualCase{};
  c.residual_shape = {c.N};
  untouched(c, "the residual broadcasts");
  c = ResidualCase{};
  c.y_read_twice = true;
  untouched(c, "Y read by another");
}

// ---- split ----

std::shared_ptr<Graph> make_split(int64_t rows, int64_t K, const std::vector<int64_t>& sizes, bool y_is_output = false) {
  PassGraph b(13);
  int64_t N = 0;
  for (int64_t s : sizes) N += s;
  b.input("a", DType::Float32, {Dim(1), Dim(rows), Dim(K)});
  b.init("w", testing::random_f32({K, N}, 7, -0.5f, 0.5f));
  b.node("MatMul", {"a", "w"}, {"y"});
  b.init("sizes", Tensor::from_vector<int64_t>({static_cast<int64_t>(sizes.size())}, sizes));
  std::vector<std::string> outs;
  for (size_t i = 0; i < sizes.size(); ++i) outs.push_back("part" + std::to_string(i));
  b.node("Split", {"y", "sizes"}, outs, {Attribute::make_int("axis", -1)});
  for (const std::string& o : outs) b.output(o);
  if (y_is_output) b.output("y");
  return b.done();
}

TEST(FuseF32DecodeEpilogue, SplitPartsWrittenByTheProduct) {
  // Panel-aligned parts (SmolLM2's q/k/v: 576 | 192 | 192), parts inside one panel and
  // straddling panels, a last panel short of 64 columns; decode and prefill rows.
  for (int64_t rows : {1, 2, 4, 5, 128})
    for (const std::vector<int64_t>& sizes :
         std::vector<std::vector<int64_t>>{{576, 192, 192}, {20, 25, 19}, {130, 7}, {1, 64, 70, 3}}) {
      const int64_t K = 96;
      SCOPED_TRACE("rows " + std::to_string(rows) + " parts from " + std::to_string(sizes[0]) + " of " +
                   std::to_string(sizes.size()));
      auto fused = make_split(rows, K, sizes);
      run_pass(*fused, passes::fuse_nbits_split());
      EXPECT_TRUE(verify_graph(*fused).empty());
      ASSERT_EQ(fused->node_count(), 1u);
      const Node* node = fused->nodes()[0];
      EXPECT_EQ(node->domain(), "octet");
      EXPECT_EQ(node->op_type(), "MatMulBias");
      EXPECT_EQ(node->attr_ints("split"), sizes);
      EXPECT_EQ(node->outputs().size(), sizes.size());
      for (size_t i = 0; i < sizes.size(); ++i)
        EXPECT_EQ(node->output(i)->type.dims->back(), Dim(sizes[i]));
      // The same product on the same packed weights: the parts are the Split's bit for bit.
      compare_everywhere(fused, make_split(rows, K, sizes), {{"a", testing::random_f32({1, rows, K}, 9)}}, 0.0);
    }
}

TEST(FuseF32DecodeEpilogue, SplitNearMissesStay) {
  auto g = make_split(1, 32, {16, 16}, /*y_is_output=*/true);
  run_pass(*g, passes::fuse_nbits_split());
  EXPECT_EQ(count_ops(*g, "MatMulBias", "octet"), 0);
  EXPECT_EQ(count_ops(*g, "Split"), 1);
}

TEST(FuseF32DecodeEpilogue, MatMulBiasChecksItsSplit) {
  // A hand-written node whose parts do not cover N: a clear error, not a wrong answer.
  PassGraph b;
  b.g->opset_imports["octet"] = 1;
  b.input("a", DType::Float32, {Dim(1), Dim(8)});
  b.init("w", testing::random_f32({8, 10}, 1));
  b.node("MatMulBias", {"a", "w"}, {"p", "q"}, {Attribute::make_ints("split", {4, 4})}, "octet");
  EXPECT_THROW(b.done(), std::exception);
}

}  // namespace
}  // namespace octet
