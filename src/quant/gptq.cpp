#include "quant/gptq.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "octet/error.h"
#include "quant/quant_params.h"
#include "runtime/session.h"

namespace octet::quant {
namespace {

constexpr int64_t kBlock = 128;   // rows rounded before the rest get their (GEMM) update
constexpr int64_t kColumns = 64;  // output channels per thread task within a block
constexpr int64_t kSlab = 2048;   // output channels per working copy (gptq_core)

size_t idx(int64_t r, int64_t c, int64_t k) { return static_cast<size_t>(r * k + c); }

void sgemm_or_fail(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float beta, float* c, int64_t ldc, const char* what) {
  if (dnnl_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) != dnnl_success)
    fail("GPTQ: oneDNN sgemm failed (", what, ")");
}

constexpr int64_t kPanel = 64;  // columns per panel of the blocked factorizations below

// Lower Cholesky factor of a (K x K, positive definite), in place; the upper triangle is
// zeroed. Left-looking by panels of kPanel columns: each panel first takes the update of
// every column before it (the K^3/6 bulk, rows in parallel, inner loops over the panel's
// contiguous columns), then is factored on its own. A column at a time would stream the
// whole matrix through the cache once per column.
void cholesky_lower(std::vector<double>& a, int64_t k) {
  std::vector<double> lt;  // L[j0:j1, 0:j0] transposed: [p][panel column]
  for (int64_t j0 = 0; j0 < k; j0 += kPanel) {
    const int64_t j1 = std::min(k, j0 + kPanel), w = j1 - j0;
    lt.assign(static_cast<size_t>(j0 * w), 0.0);
    for (int64_t jj = 0; jj < w; ++jj)
      for (int64_t p = 0; p < j0; ++p) lt[idx(p, jj, w)] = a[idx(j0 + jj, p, k)];
#pragma omp parallel for schedule(static)
    for (int64_t i = j0; i < k; ++i) {
      double acc[kPanel];
      double* row = &a[idx(i, 0, k)];
      for (int64_t jj = 0; jj < w; ++jj) acc[jj] = row[j0 + jj];
      for (int64_t p = 0; p < j0; ++p) {
        const double f = row[p];
        const double* l = &lt[idx(p, 0, w)];
#pragma omp simd
        for (int64_t jj = 0; jj < w; ++jj) acc[jj] -= f * l[jj];
      }
      for (int64_t jj = 0; jj < w; ++jj) row[j0 + jj] = acc[jj];
    }
    for (int64_t j = j0; j < j1; ++j) {  // the panel itself, against its own earlier columns
      double d = a[idx(j, j, k)];
      for (int64_t p = j0; p < j; ++p) d -= a[idx(j, p, k)] * a[idx(j, p, k)];
      if (!(d > 0)) fail("GPTQ: the damped Gram matrix is not positive definite at channel ", j);
      const double l = std::sqrt(d);
      a[idx(j, j, k)] = l;
      for (int64_t i = j + 1; i < k; ++i) {
        double v = a[idx(i, j, k)];
        for (int64_t p = j0; p < j; ++p) v -= a[idx(i, p, k)] * a[idx(j, p, k)];
        a[idx(i, j, k)] = v / l;
      }
    }
  }
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = i + 1; j < k; ++j) a[idx(i, j, k)] = 0;
}

// M^-1 of a lower triangular M (K x K), as rows: panels of kPanel columns are independent
// (one per thread); within one, rows are solved top to bottom, each row of the panel the
// combination of the rows above it (inner loops over the panel's contiguous columns).
std::vector<double> lower_inverse(const std::vector<double>& m, int64_t k) {
  std::vector<double> x(m.size(), 0.0);
  const int64_t panels = (k + kPanel - 1) / kPanel;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t b = 0; b < panels; ++b) {
    const int64_t j0 = b * kPanel, w = std::min(k, j0 + kPanel) - j0;
    std::vector<double> panel(static_cast<size_t>((k - j0) * w), 0.0);  // rows j0.., columns j0..j0+w
    for (int64_t i = j0; i < k; ++i) {
      double acc[kPanel] = {};
      if (i - j0 < w) acc[i - j0] = 1;
      const double* mi = &m[idx(i, 0, k)];
      for (int64_t p = j0; p < i; ++p) {
        const double f = mi[p];
        const double* xp = &panel[idx(p - j0, 0, w)];
#pragma omp simd
        for (int64_t jj = 0; jj < w; ++jj) acc[jj] -= f * xp[jj];
      }
      double* xi = &panel[idx(i - j0, 0, w)];
      for (int64_t jj = 0; jj < w; ++jj) xi[jj] = acc[jj] / mi[i];
    }
    for (int64_t i = j0; i < k; ++i)
      for (int64_t jj = 0; jj < w; ++jj) x[idx(i, j0 + jj, k)] = panel[idx(i - j0, jj, w)];
  }
  return x;
}

// The permutation that visits input channels by decreasing H diagonal (GPTQ's act order:
// the channels that carry the most energy are rounded first, while the most rows are left
// to absorb their error).
std::vector<int64_t> act_order(const std::vector<double>& h, int64_t k) {
  std::vector<int64_t> perm(static_cast<size_t>(k));
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return h[idx(a, a, k)] > h[idx(b, b, k)]; });
  return perm;
}

}  // namespace

GramObserver::GramObserver(std::string name, int64_t k, std::optional<DType> row_steps)
    : name_(std::move(name)), k_(k), row_steps_(row_steps), sum_(static_cast<size_t>(k) * static_cast<size_t>(k), 0.0f) {
  if (k <= 0) fail("GPTQ: input '", name_, "' has ", k, " channels");
}

void GramObserver::observe(const Tensor& t) {
  if (t.dtype() != DType::Float32) fail("GPTQ: tensor '", name_, "' is ", dtype_name(t.dtype()), ", not float32");
  if (t.rank() == 0 || t.shape().back() != k_)
    fail("GPTQ: tensor '", name_, "' has shape ", shape_to_string(t.shape()), ", expected last dim ", k_);
  const int64_t rows = t.numel() / k_;
  if (rows == 0) return;
  const float* x = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(x[i])) fail("GPTQ: tensor '", name_, "' holds a non-finite value at flat index ", i);
  // Summed in float, as GPTQ's reference implementation does: a model's worth of K x K
  // sums must fit in memory, and the damping bounds what their rounding can do.
  std::vector<float> scaled;
  if (row_steps_) {
    scaled.assign(x, x + t.numel());
    for (int64_t r = 0; r < rows; ++r) {
      float* row = scaled.data() + r * k_;
      const float step = per_token_row_span(per_token_row_range(row, static_cast<size_t>(k_)), *row_steps_);
      const float f = step > 0 ? 1.0f / step : 0.0f;
      for (int64_t j = 0; j < k_; ++j) row[j] *= f;
    }
    x = scaled.data();
  }
  sgemm_or_fail('T', 'N', k_, k_, rows, 1.0f, x, k_, x, k_, 1.0f, sum_.data(), k_, "x^T x");
  rows_ += static_cast<uint64_t>(rows);
}

std::vector<double> inverse_cholesky_upper(std::vector<double> h, int64_t k, double damp) {
  double mean_diag = 0;
  for (int64_t i = 0; i < k; ++i) mean_diag += h[idx(i, i, k)];
  mean_diag /= static_cast<double>(k);
  if (!(mean_diag > 0)) mean_diag = 1;
  for (int64_t i = 0; i < k; ++i) {
    double& d = h[idx(i, i, k)];
    if (d == 0) d = 1;  // a channel that was always zero: its rows' errors go nowhere
    d += damp * mean_diag;
  }
  // H = V V^T with V upper comes from the lower Cholesky factor of H with its channel order
  // reversed; then H^-1 = V^-T V^-1, so U = V^-1 (upper) and U^T U = H^-1.
  std::vector<double> r(h.size());
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) r[idx(i, j, k)] = h[idx(k - 1 - i, k - 1 - j, k)];
  cholesky_lower(r, k);  // r = M, lower, with J H J = M M^T; V = J M J, so U = V^-1 = J M^-1 J
  const std::vector<double> x = lower_inverse(r, k);
  std::vector<double> u(h.size(), 0.0);
  for (int64_t a = 0; a < k; ++a)
    for (int64_t b = a; b < k; ++b) u[idx(a, b, k)] = x[idx(k - 1 - a, k - 1 - b, k)];
  return u;
}

namespace {

// The GPTQ loop over w [K, N] (act order, blocks of kBlock rows, column chunks in parallel).
// round(row, column, value) quantizes one weight (row in w's own order), records its code
// and returns the value the code stands for. Columns never exchange errors, so the loop
// runs over slabs of kSlab columns, one at a time: its working copy is K x kSlab floats
// (12 MB at K 1536), not the whole weight (a 49152-word LM head: 113 MB more at the
// quantizer's peak).
template <typename Round>
void gptq_core(const float* w, int64_t k, int64_t n, const std::vector<double>& h, double damp, Round round) {
  const std::vector<int64_t> perm = act_order(h, k);
  std::vector<double> hp(h.size());
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) hp[idx(i, j, k)] = h[idx(perm[i], perm[j], k)];
  const std::vector<double> ud = inverse_cholesky_upper(std::move(hp), k, damp);
  const std::vector<float> u(ud.begin(), ud.end());  // float for the GEMM update
  const int64_t slab = std::min(n, kSlab);
  std::vector<float> work(static_cast<size_t>(k * slab));  // rows in act order
  std::vector<float> err(static_cast<size_t>(kBlock * slab));
  for (int64_t s0 = 0; s0 < n; s0 += slab) {
    const int64_t m = std::min(slab, n - s0);  // this slab's columns, s0..s0+m
    for (int64_t i = 0; i < k; ++i)
      std::copy(w + perm[i] * n + s0, w + perm[i] * n + s0 + m, work.begin() + i * m);
    for (int64_t b0 = 0; b0 < k; b0 += kBlock) {
      const int64_t b1 = std::min(k, b0 + kBlock);
      // Threads take chunks of columns through the whole block.
#pragma omp parallel for schedule(static)
      for (int64_t c0 = 0; c0 < m; c0 += kColumns) {
        const int64_t c1 = std::min(m, c0 + kColumns);
        for (int64_t r = b0; r < b1; ++r) {
          float* row = &work[idx(r, 0, m)];
          float* e = &err[idx(r - b0, 0, m)];
          const float d = u[idx(r, r, k)];
          for (int64_t c = c0; c < c1; ++c) e[c] = (row[c] - round(perm[r], s0 + c, row[c])) / d;
          for (int64_t j = r + 1; j < b1; ++j) {  // the rest of this block; the rows after it below
            const float f = u[idx(r, j, k)];
            float* dst = &work[idx(j, 0, m)];
#pragma omp simd
            for (int64_t c = c0; c < c1; ++c) dst[c] -= f * e[c];
          }
        }
      }
      if (b1 < k)  // work[b1:, :] -= U[b0:b1, b1:]^T . err
        sgemm_or_fail('T', 'N', k - b1, m, b1 - b0, -1.0f, &u[idx(b0, b1, k)], k, err.data(), m, 1.0f,
                      &work[idx(b1, 0, m)], m, "error update");
    }
  }
}

}  // namespace

std::vector<int8_t> gptq_round(const float* w, int64_t k, int64_t n, const std::vector<float>& scales,
                               const std::vector<double>& h, double damp) {
  if (scales.size() != static_cast<size_t>(n) && scales.size() != 1)
    fail("GPTQ: ", scales.size(), " scales for a weight of ", n, " output channels");
  std::vector<float> inv_scale(static_cast<size_t>(n)), scale(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c) {
    scale[c] = scales.size() == 1 ? scales[0] : scales[static_cast<size_t>(c)];
    inv_scale[c] = 1.0f / scale[c];
  }
  std::vector<int8_t> q(static_cast<size_t>(k * n));
  gptq_core(w, k, n, h, damp, [&](int64_t r, int64_t c, float v) {
    const float code = std::clamp(std::nearbyint(v * inv_scale[c]), -127.0f, 127.0f);
    q[idx(r, c, n)] = static_cast<int8_t>(code);
    return code * scale[c];
  });
  return q;
}

void gptq_round_blocks(const float* w, const std::vector<double>& h, BlockQuantized& q, double damp) {
  const float top = static_cast<float>((1 << q.bits) - 1);
  gptq_core(w, q.K, q.N, h, damp, [&](int64_t r, int64_t c, float v) {
    const size_t b = static_cast<size_t>(c * q.k_blocks + r / q.block);
    const float s = q.scales[b], z = q.zeros[b];
    const float code = std::clamp(std::nearbyint(v / s) + z, 0.0f, top);
    q.codes[static_cast<size_t>(c * q.K + r)] = static_cast<uint8_t>(code);
    return (code - z) * s;
  });
}

double output_error(const float* w, const int8_t* q, int64_t k, int64_t n, const std::vector<float>& scales,
                    const std::vector<double>& h) {
  // Columns are independent terms of both sums: slabs of kSlab keep the buffers at
  // 4 x K x kSlab floats, not 3 copies of the whole weight (340 MB for an LM head).
  const std::vector<float> hf(h.begin(), h.end());
  const int64_t slab = std::min(n, kSlab);
  std::vector<float> d(static_cast<size_t>(k * slab)), ws(d.size()), hd(d.size()), hw(d.size());
  double num = 0, den = 0;
  for (int64_t s0 = 0; s0 < n; s0 += slab) {
    const int64_t m = std::min(slab, n - s0);
    for (int64_t r = 0; r < k; ++r)
      for (int64_t c = 0; c < m; ++c) {
        const float s = scales.size() == 1 ? scales[0] : scales[static_cast<size_t>(s0 + c)];
        ws[idx(r, c, m)] = w[idx(r, s0 + c, n)];
        d[idx(r, c, m)] = ws[idx(r, c, m)] - static_cast<float>(q[idx(r, s0 + c, n)]) * s;
      }
    sgemm_or_fail('N', 'N', k, m, k, 1.0f, hf.data(), k, d.data(), m, 0.0f, hd.data(), m, "H.D");
    sgemm_or_fail('N', 'N', k, m, k, 1.0f, hf.data(), k, ws.data(), m, 0.0f, hw.data(), m, "H.W");
    for (size_t i = 0; i < static_cast<size_t>(k * m); ++i)
      num += static_cast<double>(d[i]) * hd[i], den += static_cast<double>(ws[i]) * hw[i];
  }
  return den > 0 ? num / den : 0;
}

}  // namespace octet::quant
