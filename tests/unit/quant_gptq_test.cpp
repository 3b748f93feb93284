// GPTQ rounding (quant/gptq.h): the Gram matrix, the inverse Cholesky factor and the
// error propagation on hand-computed cases, the blocked update against a plain unblocked
// implementation written here, and the output error it exists to lower.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "core/tensor.h"
#include "octet/error.h"
#include "quant/gptq.h"

namespace octet::quant {
namespace {

// H = X^T X of `rows` correlated rows: channel c mixes a few shared factors, so GPTQ has
// correlations to exploit; every 16th channel is an outlier ten times larger.
std::vector<float> correlated_rows(int64_t rows, int64_t k, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  const int factors = 4;
  std::vector<float> mix(static_cast<size_t>(factors * k));
  for (float& m : mix) m = g(gen);
  std::vector<float> x(static_cast<size_t>(rows * k));
  for (int64_t r = 0; r < rows; ++r) {
    float f[factors];
    for (float& v : f) v = g(gen);
    for (int64_t c = 0; c < k; ++c) {
      float v = 0.3f * g(gen);
      for (int i = 0; i < factors; ++i) v += f[i] * mix[static_cast<size_t>(i * k + c)];
      x[static_cast<size_t>(r * k + c)] = c % 16 == 0 ? 10 * v : v;
    }
  }
  return x;
}

std::vector<double> gram(const std::vector<float>& x, int64_t rows, int64_t k) {
  GramObserver o("x", k);
  o.observe(Tensor::from_vector<float>({rows, k}, x));
  return o.matrix();
}

// Weights of a trained layer's typical size, N(0, 0.05).
std::vector<float> small_weights(int64_t count, unsigned seed) {
  std::vector<float> w(static_cast<size_t>(count));
  std::mt19937 gen(seed);
  std::normal_distribution<float> g(0.0f, 0.05f);
  for (float& v : w) v = g(gen);
  return w;
}

std::vector<float> column_scales(const std::vector<float>& w, int64_t k, int64_t n) {
  std::vector<float> s(static_cast<size_t>(n), 0.0f);
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c) s[c] = std::max(s[c], std::fabs(w[static_cast<size_t>(r * n + c)]));
  for (float& v : s) v = v > 0 ? v / 127 : 1;
  return s;
}

std::vector<int8_t> nearest(const std::vector<float>& w, int64_t n, const std::vector<float>& s) {
  std::vector<int8_t> q(w.size());
  for (size_t i = 0; i < w.size(); ++i)
    q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(w[i] / s[i % static_cast<size_t>(n)]), -127.0f, 127.0f));
  return q;
}

// GPTQ as the paper writes it: H^-1 by Gauss-Jordan, no blocking, no act order (the caller
// orders H so that the identity order is the act order), double throughout.
std::vector<int8_t> plain_gptq(std::vector<double> w, int64_t k, int64_t n, const std::vector<float>& s,
                               std::vector<double> h, double damp) {
  double mean = 0;
  for (int64_t i = 0; i < k; ++i) mean += h[i * k + i];
  for (int64_t i = 0; i < k; ++i) h[i * k + i] += damp * mean / k;
  std::vector<double> inv(k * k, 0.0);
  for (int64_t i = 0; i < k; ++i) inv[i * k + i] = 1;
  for (int64_t c = 0; c < k; ++c) {  // Gauss-Jordan on an SPD matrix: no pivoting needed
    const double p = h[c * k + c];
    for (int64_t j = 0; j < k; ++j) h[c * k + j] /= p, inv[c * k + j] /= p;
    for (int64_t r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = h[r * k + c];
      for (int64_t j = 0; j < k; ++j) h[r * k + j] -= f * h[c * k + j], inv[r * k + j] -= f * inv[c * k + j];
    }
  }
  std::vector<int8_t> q(static_cast<size_t>(k * n));
  for (int64_t r = 0; r < k; ++r) {
    // The remaining rows' inverse Hessian after eliminating rows < r (the OBS update).
    const double d = inv[r * k + r];
    for (int64_t c = 0; c < n; ++c) {
      const double v = std::clamp(std::nearbyint(w[r * n + c] / s[c]), -127.0, 127.0);
      q[r * n + c] = static_cast<int8_t>(v);
      const double e = (w[r * n + c] - v * s[c]) / d;
      for (int64_t j = r + 1; j < k; ++j) w[j * n + c] -= e * inv[r * k + j];
    }
    for (int64_t i = r + 1; i < k; ++i)
      for (int64_t j = r + 1; j < k; ++j) inv[i * k + j] -= inv[i * k + r] * inv[r * k + j] / d;
  }
  return q;
}

TEST(Gptq, GramMatrixIsXTransposeX) {
  GramObserver o("x", 2);
  o.observe(Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  o.observe(Tensor::from_vector<float>({1, 1, 2}, {1, -1}));
  const std::vector<double> expect{1 + 9 + 25 + 1, 2 + 12 + 30 - 1, 2 + 12 + 30 - 1, 4 + 16 + 36 + 1};
  EXPECT_EQ(o.matrix(), expect);
  EXPECT_EQ(o.rows(), 4u);
  EXPECT_THROW(o.observe(Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})), Error);
  EXPECT_THROW(o.observe(Tensor::from_vector<float>({1, 2}, {1, NAN})), Error);
}

TEST(Gptq, RowStepGramDividesEachRowByItsQuantizationRange) {
  // uint8 rows are divided by max(x, 0) - min(x, 0): (300, 400) by 400 -> (0.75, 1);
  // (0, 0) adds nothing; (1, -1) by 2 -> (0.5, -0.5); (-2, -1) by 2 -> (-1, -0.5).
  GramObserver u("x", 2, DType::UInt8);
  u.observe(Tensor::from_vector<float>({4, 2}, {300, 400, 0, 0, 1, -1, -2, -1}));
  const std::vector<double> want_u{0.5625 + 0.25 + 1, 0.75 - 0.25 + 0.5, 0.75 - 0.25 + 0.5, 1 + 0.25 + 0.25};
  // int8 rows by max|x|: (0.75, 1), (1, -1), (-1, -0.5).
  GramObserver s("x", 2, DType::Int8);
  s.observe(Tensor::from_vector<float>({4, 2}, {300, 400, 0, 0, 1, -1, -2, -1}));
  const std::vector<double> want_s{0.5625 + 1 + 1, 0.75 - 1 + 0.5, 0.75 - 1 + 0.5, 1 + 1 + 0.25};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(u.matrix()[i], want_u[i], 1e-6) << i;
    EXPECT_NEAR(s.matrix()[i], want_s[i], 1e-6) << i;
  }
  EXPECT_EQ(u.rows(), 4u);
}

TEST(Gptq, InverseCholeskyUpperByHand) {
  // H = [[4, 2], [2, 3]]: H^-1 = [[3, -2], [-2, 4]] / 8 = U^T U with U upper:
  // U00 = sqrt(3/8), U01 = -(1/4) / U00, U11 = sqrt(1/2 - U01^2) = sqrt(1/3).
  const std::vector<double> u = inverse_cholesky_upper({4, 2, 2, 3}, 2, 0.0);
  EXPECT_NEAR(u[0], std::sqrt(3.0 / 8), 1e-12);
  EXPECT_NEAR(u[1], -0.25 / std::sqrt(3.0 / 8), 1e-12);
  EXPECT_EQ(u[2], 0.0);
  EXPECT_NEAR(u[3], std::sqrt(1.0 / 3), 1e-12);
}

TEST(Gptq, InverseCholeskyUpperOfCorrelatedGram) {
  const int64_t k = 37;
  const std::vector<double> h = gram(correlated_rows(200, k, 3), 200, k);
  const double damp = 0.01;
  const std::vector<double> u = inverse_cholesky_upper(h, k, damp);
  double mean = 0;
  for (int64_t i = 0; i < k; ++i) mean += h[i * k + i] / k;
  // (U^T U) (H + damp mean I) = I
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) {
      double v = 0;
      for (int64_t p = 0; p < k; ++p) {
        double utu = 0;
        for (int64_t q = 0; q <= std::min(i, p); ++q) utu += u[q * k + i] * u[q * k + p];
        v += utu * (h[p * k + j] + (p == j ? damp * mean : 0));
      }
      EXPECT_NEAR(v, i == j ? 1.0 : 0.0, 1e-8) << i << "," << j;
    }
  for (int64_t i = 1; i < k; ++i) EXPECT_EQ(u[i * k + i - 1], 0.0);  // upper
}

TEST(Gptq, PropagatesTheErrorByHand) {
  // K = 2, N = 1, scale 1, H = [[1, .5], [.5, 1]], w = [.4, .4]: row 0 rounds to 0 and
  // its error .4 moves onto row 1 as .4 * (2/3) / (4/3) = .2, so row 1 rounds .6 to 1.
  // Nearest gives [0, 0] with output error d^T H d = .48; GPTQ's [0, 1] gives .28.
  const std::vector<double> h{1, 0.5, 0.5, 1};
  const std::vector<float> w{0.4f, 0.4f};
  const std::vector<int8_t> q = gptq_round(w.data(), 2, 1, {1.0f}, h, 0.0);
  EXPECT_EQ(q, (std::vector<int8_t>{0, 1}));
  EXPECT_NEAR(output_error(w.data(), q.data(), 2, 1, {1.0f}, h), 0.28 / 0.48, 1e-6);
  const std::vector<int8_t> n{0, 0};
  EXPECT_NEAR(output_error(w.data(), n.data(), 2, 1, {1.0f}, h), 1.0, 1e-6);
}

TEST(Gptq, UncorrelatedInputsRoundToNearest) {
  // A diagonal H: no row's error has anywhere to go, GPTQ is nearest rounding.
  const int64_t k = 5, n = 3;
  std::vector<double> h(k * k, 0.0);
  for (int64_t i = 0; i < k; ++i) h[i * k + i] = 1.0 + i;
  std::vector<float> w(k * n);
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> d(-1, 1);
  for (float& v : w) v = d(gen);
  const std::vector<float> s = column_scales(w, k, n);
  EXPECT_EQ(gptq_round(w.data(), k, n, s, h), nearest(w, n, s));
}

TEST(Gptq, BlockedMatchesPlainAcrossBlocks) {
  // K = 300 crosses two 128-row blocks and ends in a partial one; N = 7 is odd.
  const int64_t k = 300, n = 7, rows = 600;
  std::vector<double> h = gram(correlated_rows(rows, k, 5), rows, k);
  // Order H's channels by decreasing diagonal first, so act order is the identity for both.
  std::vector<int64_t> perm(k);
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return h[a * k + a] > h[b * k + b]; });
  std::vector<double> hp(k * k);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) hp[i * k + j] = h[perm[i] * k + perm[j]];
  const std::vector<float> w = small_weights(k * n, 7);
  const std::vector<float> s = column_scales(w, k, n);
  const std::vector<int8_t> blocked = gptq_round(w.data(), k, n, s, hp);
  const std::vector<int8_t> plain = plain_gptq(std::vector<double>(w.begin(), w.end()), k, n, s, hp, 0.01);
  // Float vs double updates may flip a value sitting on a rounding boundary, nothing more.
  size_t differ = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_LE(std::abs(blocked[i] - plain[i]), 1) << i;
    differ += blocked[i] != plain[i];
  }
  EXPECT_LE(differ, plain.size() / 100) << differ << " of " << plain.size();
  const double eb = output_error(w.data(), blocked.data(), k, n, s, hp);
  const double ep = output_error(w.data(), plain.data(), k, n, s, hp);
  EXPECT_NEAR(eb, ep, 0.05 * ep);
}

// Columns never exchange errors, and the rounding works on slabs of 2048 of them: a weight
// of 4100 columns (two full slabs and a partial one) rounds as its column ranges do alone.
TEST(Gptq, WideWeightsRoundAsTheirColumnRangesAlone) {
  const int64_t k = 200, n = 4100, rows = 300, split = 2500;
  const std::vector<double> h = gram(correlated_rows(rows, k, 13), rows, k);
  const std::vector<float> w = small_weights(k * n, 17);
  const std::vector<float> s = column_scales(w, k, n);
  const std::vector<int8_t> whole = gptq_round(w.data(), k, n, s, h);
  auto columns = [&](int64_t c0, int64_t c1) {
    std::vector<float> part;
    for (int64_t r = 0; r < k; ++r) part.insert(part.end(), w.begin() + r * n + c0, w.begin() + r * n + c1);
    const std::vector<float> ps(s.begin() + c0, s.begin() + c1);
    return gptq_round(part.data(), k, c1 - c0, ps, h);
  };
  const std::vector<int8_t> left = columns(0, split), right = columns(split, n);
  size_t differ = 0;
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c) {
      const int8_t alone = c < split ? left[r * split + c] : right[r * (n - split) + c - split];
      const int8_t got = whole[r * n + c];
      ASSERT_LE(std::abs(got - alone), 1) << r << "," << c;
      differ += got != alone;
    }
  // The error updates are the same sums, blocked differently by the GEMM: a value exactly
  // on a rounding boundary may flip, nothing more.
  EXPECT_LE(differ, whole.size() / 1000) << differ << " of " << whole.size();
}

// output_error sums over slabs of columns too: against the plain double formula
// sum_c d_c^T H d_c / sum_c w_c^T H w_c (d = w - dequantized q) on 4100 columns.
TEST(Gptq, OutputErrorOfAWideWeightIsTheWholeSum) {
  const int64_t k = 48, n = 4100, rows = 100;
  const std::vector<double> h = gram(correlated_rows(rows, k, 19), rows, k);
  const std::vector<float> w = small_weights(k * n, 23);
  const std::vector<float> s = column_scales(w, k, n);
  const std::vector<int8_t> q = nearest(w, n, s);
  double num = 0, den = 0;
  for (int64_t c = 0; c < n; ++c)
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < k; ++j) {
        const double di = w[i * n + c] - double(q[i * n + c]) * s[c], dj = w[j * n + c] - double(q[j * n + c]) * s[c];
        num += di * h[i * k + j] * dj;
        den += double(w[i * n + c]) * h[i * k + j] * w[j * n + c];
      }
  EXPECT_NEAR(output_error(w.data(), q.data(), k, n, s, h), num / den, 1e-4 * num / den);
}

TEST(Gptq, LowersTheOutputErrorOfNearestRounding) {
  const int64_t k = 160, n = 24, rows = 400;
  const std::vector<double> h = gram(correlated_rows(rows, k, 9), rows, k);
  const std::vector<float> w = small_weights(k * n, 11);
  const std::vector<float> s = column_scales(w, k, n);
  const std::vector<int8_t> q = gptq_round(w.data(), k, n, s, h);
  for (int8_t v : q) ASSERT_GE(v, -127);
  const double e_gptq = output_error(w.data(), q.data(), k, n, s, h);
  const double e_near = output_error(w.data(), nearest(w, n, s).data(), k, n, s, h);
  EXPECT_LT(e_gptq, 0.7 * e_near) << "gptq " << e_gptq << " nearest " << e_near;
  // A per-tensor scale works the same way.
  const float one = *std::max_element(s.begin(), s.end());
  const std::vector<int8_t> qt = gptq_round(w.data(), k, n, {one}, h);
  EXPECT_LT(output_error(w.data(), qt.data(), k, n, {one}, h),
            output_error(w.data(), nearest(w, n, std::vector<float>(n, one)).data(), k, n, {one}, h));
  EXPECT_THROW(gptq_round(w.data(), k, n, {1.0f, 2.0f}, h), Error);
}

TEST(Gptq, BlockedInt4KeepsTheGridAndLowersTheOutputError) {
  const int64_t k = 96, n = 10, rows = 300, block = 32;
  const std::vector<double> h = gram(correlated_rows(rows, k, 13), rows, k);
  const std::vector<float> w = small_weights(k * n, 17);
  for (bool symmetric : {true, false}) {
    const BlockQuantized rtn = quantize_blocks_rtn(w.data(), k, n, 4, block, symmetric);
    BlockQuantized q = rtn;
    gptq_round_blocks(w.data(), h, q);
    EXPECT_EQ(q.scales, rtn.scales);  // static groups: the grid is nearest rounding's
    EXPECT_EQ(q.zeros, rtn.zeros);
    for (uint8_t c : q.codes) ASSERT_LE(c, 15);
    // Output error under H of both, through the dequantized values.
    auto error = [&](const BlockQuantized& b) {
      std::vector<double> d(k * n);
      for (int64_t r = 0; r < k; ++r)
        for (int64_t c = 0; c < n; ++c) d[r * n + c] = w[r * n + c] - dequantized(b, r, c);
      double e = 0;
      for (int64_t c = 0; c < n; ++c)
        for (int64_t i = 0; i < k; ++i)
          for (int64_t j = 0; j < k; ++j) e += d[i * n + c] * h[i * k + j] * d[j * n + c];
      return e;
    };
    EXPECT_LT(error(q), 0.7 * error(rtn)) << (symmetric ? "symmetric" : "asymmetric");
  }
  // A diagonal H leaves nothing to trade: the codes are nearest rounding's.
  std::vector<double> diag(k * k, 0.0);
  for (int64_t i = 0; i < k; ++i) diag[i * k + i] = 1;
  const BlockQuantized rtn = quantize_blocks_rtn(w.data(), k, n, 4, block, true);
  BlockQuantized q = rtn;
  gptq_round_blocks(w.data(), diag, q);
  EXPECT_EQ(q.codes, rtn.codes);
}

}  // namespace
}  // namespace octet::quant
