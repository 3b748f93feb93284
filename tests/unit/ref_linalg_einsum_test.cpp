// Reference kernel: Einsum.
#include "ref_shape_testing.h"

namespace octet {
namespace {

using namespace reftest;
using Shape = std::vector<int64_t>;
using F = std::vector<float>;

Tensor einsum(const std::string& eq, const Inputs& in) {
  return run1("Einsum", in, {Attribute::make_string("equation", eq)}, 12);
}

// Batched [B,M,K] x [B,K,N] in double, for checking the matmul-like forms.
F naive_bmm(const F& a, const F& b, int64_t batch, int64_t m, int64_t k, int64_t n, bool b_transposed = false) {
  F c(static_cast<size_t>(batch * m * n));
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) {
          const float bv = b_transposed ? b[(t * n + j) * k + p] : b[(t * k + p) * n + j];
          s += double(a[(t * m + i) * k + p]) * bv;
        }
        c[(t * m + i) * n + j] = static_cast<float>(s);
      }
  return c;
}

TEST(RefEinsum, AttentionScoresAndContext) {
  const int64_t b = 2, h = 3, s = 5, t = 4, d = 6;
  F q = noise(b * h * s * d, 1), k = noise(b * h * t * d, 2), v = noise(b * h * t * d, 3);
  Tensor scores = einsum("bhid,bhjd->bhij", {f32({b, h, s, d}, q), f32({b, h, t, d}, k)});
  EXPECT_EQ(scores.shape(), (Shape{b, h, s, t}));
  expect_close(values<float>(scores), naive_bmm(q, k, b * h, s, d, t, /*b_transposed=*/true), 1e-5f);
  F p = noise(b * h * s * t, 4);
  Tensor ctx = einsum("bhij,bhjd->bhid", {f32({b, h, s, t}, p), f32({b, h, t, d}, v)});
  EXPECT_EQ(ctx.shape(), (Shape{b, h, s, d}));
  expect_close(values<float>(ctx), naive_bmm(p, v, b * h, s, t, d), 1e-5f);
}

TEST(RefEinsum, MatmulForms) {
  F a = noise(2 * 3 * 4, 5), w = noise(2 * 4 * 7, 6);
  expect_close(values<float>(einsum("bij,bjk->bik", {f32({2, 3, 4}, a), f32({2, 4, 7}, w)})),
               naive_bmm(a, w, 2, 3, 4, 7), 1e-5f);
  expect_close(values<float>(einsum("...ij,...jk->...ik", {f32({2, 3, 4}, a), f32({2, 4, 7}, w)})),
               naive_bmm(a, w, 2, 3, 4, 7), 1e-5f);
  expect_close(values<float>(einsum("bij, bjk -> bik", {f32({2, 3, 4}, a), f32({2, 4, 7}, w)})),
               naive_bmm(a, w, 2, 3, 4, 7), 1e-5f);
  // "bid,dj->bij": a batch of rows times one shared matrix
  F m(w.begin(), w.begin() + 4 * 7);
  F want;
  for (int64_t t = 0; t < 2; ++t) {
    F part = naive_bmm(F(a.begin() + t * 12, a.begin() + (t + 1) * 12), m, 1, 3, 4, 7);
    want.insert(want.end(), part.begin(), part.end());
  }
  expect_close(values<float>(einsum("bid,dj->bij", {f32({2, 3, 4}, a), f32({4, 7}, m)})), want, 1e-5f);
  // Outer product
  Tensor outer = einsum("i,j->ij", {f32({2}, {1, 2}), f32({3}, {3, 4, 5})});
  EXPECT_EQ(outer.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(outer), (F{3, 4, 5, 6, 8, 10}));
}

TEST(RefEinsum, OnnxBackendForms) {
  Tensor x = iota_f32({3, 4});
  EXPECT_EQ(values<float>(einsum("ij->ji", {x})), (F{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  EXPECT_EQ(values<float>(einsum("ij->i", {x})), (F{6, 22, 38}));
  EXPECT_EQ(values<float>(einsum("i,i", {f32({3}, {1, 2, 3}), f32({3}, {4, 5, 6})})), (F{32}));
  Tensor diag = einsum("...ii ->...i", {iota_f32({2, 3, 3})});
  EXPECT_EQ(diag.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(diag), (F{0, 4, 8, 9, 13, 17}));
  Tensor scalar = einsum("->", {f32({}, {2.5f})});
  EXPECT_EQ(scalar.shape(), Shape{});
  EXPECT_EQ(values<float>(scalar), (F{2.5f}));
}

TEST(RefEinsum, ImplicitOutputIsSortedSingleLabels) {
  Tensor x = iota_f32({2, 3});
  EXPECT_EQ(einsum("ij", {x}).shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(einsum("ba", {x})), (F{0, 3, 1, 4, 2, 5}));  // output "ab": a transpose
  EXPECT_EQ(values<float>(einsum("ii", {iota_f32({3, 3})})), (F{12}));  // trace
  Tensor y = einsum("ij,jk", {x, iota_f32({3, 2})});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(y), (F{10, 13, 28, 40}));
  // Upper case sorts before lower case: "Ba" -> output "Ba"
  EXPECT_EQ(einsum("aB", {x}).shape(), (Shape{3, 2}));
  // Ellipsis dims lead the implicit output and broadcast across operands.
  Tensor e = einsum("...ij,...jk", {iota_f32({2, 1, 3, 4}), iota_f32({5, 4, 6})});
  EXPECT_EQ(e.shape(), (Shape{2, 5, 3, 6}));
}

TEST(RefEinsum, ThreeOperandsSumsAndBroadcastOnes) {
  F a = noise(2 * 3, 7), b = noise(3 * 4, 8), c = noise(4 * 2, 9);
  F ab = naive_bmm(a, b, 1, 2, 3, 4), want = naive_bmm(ab, c, 1, 2, 4, 2);
  expect_close(values<float>(einsum("ij,jk,kl->il", {f32({2, 3}, a), f32({3, 4}, b), f32({4, 2}, c)})), want, 1e-5f);
  // a label missing from the output is summed even if it appears once
  EXPECT_EQ(values<float>(einsum("ij->", {iota_f32({2, 3})})), (F{15}));
  // size-1 dims broadcast against the label's size (as numpy)
  EXPECT_EQ(values<float>(einsum("ij,ij->ij", {f32({2, 1}, {1, 2}), iota_f32({2, 3})})), (F{0, 1, 2, 6, 8, 10}));
  // an empty contraction gives zeros
  Tensor z = einsum("ij,jk->ik", {Tensor(DType::Float32, {2, 0}), Tensor(DType::Float32, {0, 3})});
  EXPECT_EQ(values<float>(z), F(6, 0.0f));
  EXPECT_EQ(einsum("ij,jk->ik", {Tensor(DType::Float32, {0, 2}), iota_f32({2, 3})}).shape(), (Shape{0, 3}));
}

TEST(RefEinsum, Dtypes) {
  Tensor h = einsum("ij,jk->ik", {f16({1, 2}, {1, 2}), f16({2, 1}, {3, 4})});
  EXPECT_EQ(h.describe(), "float16[1,1]");
  EXPECT_EQ(floats(h), (F{11}));
  Tensor b = einsum("ij->i", {bf16({2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(floats(b), (F{3, 7}));
  Tensor l = einsum("i,i->", {ints({1, 2, 3}), ints({-1, 1, 2})});
  EXPECT_EQ(values<int64_t>(l), (std::vector<int64_t>{7}));
  Tensor d = einsum("i->", {f64({2}, {0.5, 0.25})});
  EXPECT_EQ(values<double>(d), (std::vector<double>{0.75}));
}

TEST(RefEinsum, Errors) {
  Tensor x = iota_f32({2, 3});
  expect_node_error([&] { einsum("ij,jk->ik", {x}); }, "2 operand terms but the node has 1 inputs");
  expect_node_error([&] { einsum("ijk->i", {x}); }, "does not fit input");
  expect_node_error([&] { einsum("i1->i", {x}); }, "bad term");
  expect_node_error([&] { einsum("ij,jk->ik", {x, iota_f32({2, 2})}); }, "has size 2 but its label already has size 3");
  expect_node_error([&] { einsum("ij->k", {x}); }, "output label 'k' is in no input");
  expect_node_error([&] { einsum("ij->ii", {x}); }, "repeated");
  expect_node_error([&] { einsum("...j->j", {iota_f32({2, 3})}); }, "no '...'");
  expect_node_error([&] { einsum("ij,jk->ik", {x, ints({3, 3, 3})}); }, "differs in type");
  expect_node_error([&] { run1("Einsum", {x}, {}, 12); }, "'equation' is required");
}

}  // namespace
}  // namespace octet
