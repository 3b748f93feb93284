// Reference kernels: MatMul, Gemm.
#include <chrono>
#include <cstdio>
#include <limits>

#include "ref_shape_testing.h"

namespace octet {
namespace {

using namespace reftest;
using Shape = std::vector<int64_t>;
using F = std::vector<float>;

// Naive [M,K] x [K,N] in double.
std::vector<float> naive_mm(const F& a, const F& b, int64_t m, int64_t k, int64_t n) {
  F c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += double(a[i * k + p]) * b[p * n + j];
      c[i * n + j] = static_cast<float>(s);
    }
  return c;
}

// ---------------------------------------------------------------- MatMul

TEST(RefMatMul, TwoByTwoByHand) {
  Tensor y = run1("MatMul", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3, 2}, {7, 8, 9, 10, 11, 12})}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(y), (F{58, 64, 139, 154}));
}

TEST(RefMatMul, OneDimensionalOperandsArePromotedAndDropped) {
  Tensor v = f32({3}, {1, 2, 3});
  Tensor dot = run1("MatMul", {v, v}, {}, 13);
  EXPECT_EQ(dot.shape(), Shape{});
  EXPECT_EQ(values<float>(dot)[0], 14.0f);
  Tensor m = iota_f32({2, 3, 4});  // [1,3] x [2,3,4] -> [2,4]
  Tensor y = run1("MatMul", {v, m}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{2, 4}));
  EXPECT_EQ(values<float>(y), (F{32, 38, 44, 50, 104, 110, 116, 122}));
  Tensor z = run1("MatMul", {iota_f32({2, 2, 3}), v}, {}, 13);  // [2,2,3] x [3,1] -> [2,2]
  EXPECT_EQ(z.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(z), (F{8, 26, 44, 62}));
}

TEST(RefMatMul, BatchDimsBroadcast) {
  const int64_t M = 3, K = 4, N = 2;
  F a = noise(2 * 1 * M * K, 1), b = noise(5 * K * N, 2);
  Tensor y = run1("MatMul", {f32({2, 1, M, K}, a), f32({5, K, N}, b)}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{2, 5, M, N}));
  F got = values<float>(y);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      F want = naive_mm(F(a.begin() + i * M * K, a.begin() + (i + 1) * M * K),
                        F(b.begin() + j * K * N, b.begin() + (j + 1) * K * N), M, K, N);
      expect_close(F(got.begin() + (i * 5 + j) * M * N, got.begin() + (i * 5 + j + 1) * M * N), want, 1e-5f);
    }
  // A broadcast against a batch of B, the 2-D operand reused for each batch entry.
  F w(b.begin(), b.begin() + K * N);
  Tensor z = run1("MatMul", {f32({2, 1, M, K}, a), f32({K, N}, w)}, {}, 13);
  EXPECT_EQ(z.shape(), (Shape{2, 1, M, N}));
  F zv = values<float>(z);
  expect_close(F(zv.begin() + M * N, zv.end()), naive_mm(F(a.begin() + M * K, a.end()), w, M, K, N), 1e-5f);
}

TEST(RefMatMul, RaggedAndLargeK) {
  F a = noise(7 * 13, 3), b = noise(13 * 5, 4);
  expect_close(values<float>(run1("MatMul", {f32({7, 13}, a), f32({13, 5}, b)}, {}, 13)), naive_mm(a, b, 7, 13, 5), 1e-5f);
  // K = 4099 with small integers: every partial sum is exact in float32.
  const int64_t K = 4099;
  F x(2 * K), w(K * 3);
  for (int64_t i = 0; i < 2 * K; ++i) x[i] = static_cast<float>((i * 7) % 5 - 2);
  for (int64_t i = 0; i < K * 3; ++i) w[i] = static_cast<float>((i * 3) % 7 - 3);
  EXPECT_EQ(values<float>(run1("MatMul", {f32({2, K}, x), f32({K, 3}, w)}, {}, 13)), naive_mm(x, w, 2, K, 3));
}

TEST(RefMatMul, EmptyDims) {
  Tensor y = run1("MatMul", {Tensor(DType::Float32, {2, 0}), Tensor(DType::Float32, {0, 3})}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(y), F(6, 0.0f));  // empty sum
  EXPECT_EQ(run1("MatMul", {Tensor(DType::Float32, {0, 4}), iota_f32({4, 3})}, {}, 13).shape(), (Shape{0, 3}));
  EXPECT_EQ(run1("MatMul", {Tensor(DType::Float32, {0, 2, 4}), iota_f32({4, 3})}, {}, 13).shape(), (Shape{0, 2, 3}));
}

TEST(RefMatMul, IntegerAndHalfTypes) {
  Tensor y = run1("MatMul", {i64({2, 2}, {1, -2, 3, 4}), i64({2, 1}, {5, 6})}, {}, 13);
  EXPECT_EQ(values<int64_t>(y), (std::vector<int64_t>{-7, 39}));
  y = run1("MatMul", {i32({1, 2}, {2, 3}), i32({2, 1}, {-4, 5})}, {}, 13);
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{7}));
  // int32 overflow wraps like a 32-bit kernel would, without undefined behaviour
  y = run1("MatMul", {i32({1, 2}, {1 << 30, 1 << 30}), i32({2, 1}, {4, 0})}, {}, 13);
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{0}));
  Tensor h = run1("MatMul", {f16({1, 3}, {0.5f, 1, 2}), f16({3, 1}, {2, 4, 8})}, {}, 13);
  EXPECT_EQ(h.describe(), "float16[1,1]");
  EXPECT_EQ(floats(h), (F{21}));
  Tensor b = run1("MatMul", {bf16({2}, {1.5f, 2}), bf16({2}, {2, 4})}, {}, 13);
  EXPECT_EQ(b.describe(), "bfloat16[]");
  EXPECT_EQ(floats(b), (F{11}));
  // float16 accumulates in float32: 2048 + 1 + 1 would be 2048 in float16 steps
  h = run1("MatMul", {f16({1, 3}, {2048, 1, 1}), f16({3, 1}, {1, 1, 1})}, {}, 13);
  EXPECT_EQ(floats(h), (F{2050}));
}

TEST(RefMatMul, Errors) {
  expect_node_error([] { run1("MatMul", {iota_f32({2, 3}), iota_f32({2, 3})}, {}, 13); }, "inner dims differ");
  expect_node_error([] { run1("MatMul", {iota_f32({2, 2, 3}), iota_f32({3, 3, 2})}, {}, 13); }, "do not broadcast");
  expect_node_error([] { run1("MatMul", {iota_f32({2}), ints({2})}, {}, 13); }, "but B is");
  expect_node_error([] { run1("MatMul", {Tensor::scalar<float>(1), iota_f32({1})}, {}, 13); }, "rank >= 1");
  expect_node_error([] { run1("MatMul", {boolean({1}, {true}), boolean({1}, {true})}, {}, 13); }, "unsupported element type bool");
}

// [1,128,768] x [768,768], a BERT-sized projection. The time is printed for information
// only: speed is measured in benchmarks, never asserted in unit tests.
TEST(RefMatMul, BertSizedProjection) {
  F a = noise(128 * 768, 5), w = noise(768 * 768, 6);
  Tensor A = f32({1, 128, 768}, a), W = f32({768, 768}, w);
  auto start = std::chrono::steady_clock::now();
  Tensor y = run1("MatMul", {A, W}, {}, 13);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ timing   ] MatMul [1,128,768]x[768,768]: %.3f s\n", seconds);
  EXPECT_EQ(y.shape(), (Shape{1, 128, 768}));
  // Spot-check a few rows against the naive product.
  F got = values<float>(y);
  for (int64_t row : {0, 77, 127}) {
    F want = naive_mm(F(a.begin() + row * 768, a.begin() + (row + 1) * 768), w, 1, 768, 768);
    expect_close(F(got.begin() + row * 768, got.begin() + (row + 1) * 768), want, 1e-4f);
  }
}

// ---------------------------------------------------------------- Gemm

Attrs gemm_attrs(float alpha, float beta, int ta, int tb) {
  return {Attribute::make_float("alpha", alpha), Attribute::make_float("beta", beta),
          Attribute::make_int("transA", ta), Attribute::make_int("transB", tb)};
}

TEST(RefGemm, BiasBroadcastsUnidirectionally) {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6}), b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  EXPECT_EQ(values<float>(run1("Gemm", {a, b}, {}, 13)), (F{58, 64, 139, 154}));
  EXPECT_EQ(values<float>(run1("Gemm", {a, b, f32({}, {1})}, {}, 13)), (F{59, 65, 140, 155}));
  EXPECT_EQ(values<float>(run1("Gemm", {a, b, f32({1}, {1})}, {}, 13)), (F{59, 65, 140, 155}));
  EXPECT_EQ(values<float>(run1("Gemm", {a, b, f32({2}, {1, 2})}, {}, 13)), (F{59, 66, 140, 156}));
  EXPECT_EQ(values<float>(run1("Gemm", {a, b, f32({2, 1}, {1, 2})}, {}, 13)), (F{59, 65, 141, 156}));
  EXPECT_EQ(values<float>(run1("Gemm", {a, b, f32({1, 2}, {1, 2})}, {}, 13)), (F{59, 66, 140, 156}));
  EXPECT_EQ(values<float>(run1("Gemm", {a, b, f32({2, 2}, {1, 2, 3, 4})}, {}, 13)), (F{59, 66, 142, 158}));
  EXPECT_EQ(values<float>(run1("Gemm", {a, b, std::nullopt}, {}, 13)), (F{58, 64, 139, 154}));
}

TEST(RefGemm, TransposesAlphaBeta) {
  F a = noise(3 * 5, 7), b = noise(5 * 4, 8), c = noise(3 * 4, 9);
  F prod = naive_mm(a, b, 3, 5, 4);
  // A^T stored as [5,3], B^T stored as [4,5]
  F at(15), bt(20);
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 5; ++k) at[k * 3 + i] = a[i * 5 + k];
  for (int k = 0; k < 5; ++k)
    for (int j = 0; j < 4; ++j) bt[j * 5 + k] = b[k * 4 + j];
  F want(12);
  for (int i = 0; i < 12; ++i) want[i] = 0.25f * prod[i] + 0.35f * c[i];
  for (int ta : {0, 1})
    for (int tb : {0, 1}) {
      Tensor A = ta ? f32({5, 3}, at) : f32({3, 5}, a);
      Tensor B = tb ? f32({4, 5}, bt) : f32({5, 4}, b);
      expect_close(values<float>(run1("Gemm", {A, B, f32({3, 4}, c)}, gemm_attrs(0.25f, 0.35f, ta, tb), 13)), want, 1e-5f,
                   "transA " + std::to_string(ta) + " transB " + std::to_string(tb));
    }
}

TEST(RefGemm, BetaZeroIgnoresC) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor y = run1("Gemm", {f32({1, 1}, {2}), f32({1, 1}, {3}), f32({1}, {nan})}, gemm_attrs(1, 0, 0, 0), 13);
  EXPECT_EQ(values<float>(y), (F{6}));
}

TEST(RefGemm, HalfAndIntegerTypes) {
  Tensor h = run1("Gemm", {f16({1, 2}, {1, 2}), f16({2, 1}, {3, 4}), f16({1}, {0.5f})}, {}, 13);
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(floats(h), (F{11.5f}));
  Tensor i = run1("Gemm", {i32({1, 2}, {1, 2}), i32({2, 1}, {3, 4}), i32({1}, {-1})}, {}, 13);
  EXPECT_EQ(values<int32_t>(i), (std::vector<int32_t>{10}));
  i = run1("Gemm", {i64({1, 2}, {1, 2}), i64({2, 1}, {3, 4}), i64({1}, {-1})}, gemm_attrs(0.5f, 2, 0, 0), 13);
  EXPECT_EQ(values<int64_t>(i), (std::vector<int64_t>{3}));  // 5.5 - 2 = 3.5, truncated
}

TEST(RefGemm, Errors) {
  Tensor a = iota_f32({2, 3});
  expect_node_error([&] { run1("Gemm", {a, iota_f32({2, 3})}, {}, 13); }, "inner dims differ");
  expect_node_error([&] { run1("Gemm", {a, iota_f32({3, 2}), iota_f32({3})}, {}, 13); }, "does not broadcast to [2,2]");
  expect_node_error([&] { run1("Gemm", {a, iota_f32({3, 2}), iota_f32({1, 2, 2})}, {}, 13); }, "does not broadcast");
  expect_node_error([&] { run1("Gemm", {iota_f32({3}), iota_f32({3, 2})}, {}, 13); }, "must be 2-D");
}

}  // namespace
}  // namespace octet
