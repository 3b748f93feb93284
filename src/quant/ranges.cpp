#include "quant/ranges.h"

#include <algorithm>
#include <functional>
#include <cmath>
#include <limits>
#include <vector>

#include "octet/error.h"

namespace octet::quant {

namespace {

std::string label(const HistogramObserver& h) { return h.name().empty() ? "tensor" : "tensor '" + h.name() + "'"; }

void check_levels(const HistogramObserver& h, int quant_levels) {
  if (quant_levels < 4 || quant_levels > 65536)
    fail(label(h), ": quant_levels must be in [4, 65536], got ", quant_levels);
}

// Bin k's extent with the outermost occupied bins cut to the exact [min, max].
struct Extent {
  double lo, hi;
  double mid() const { return 0.5 * (lo + hi); }
};
Extent extent(const HistogramObserver& h, int k) {
  const double lo = h.bin_lo(k), hi = lo + h.bin_width();
  return {std::max(lo, static_cast<double>(h.min())), std::min(hi, static_cast<double>(h.max()))};
}

// The value below which a fraction q of the values lie, interpolating within a bin.
double quantile(const HistogramObserver& h, double q) {
  const double target = q * static_cast<double>(h.count());
  double below = 0;
  for (int k = 0; k < h.bins(); ++k) {
    const double c = static_cast<double>(h.counts()[k]);
    if (c == 0 || below + c < target) {
      below += c;
      continue;
    }
    const Extent e = extent(h, k);
    return e.lo + (target - below) / c * (e.hi - e.lo);
  }
  return h.max();
}

Range clamp_range(const HistogramObserver& h, double lo, double hi) {
  const float l = static_cast<float>(std::clamp(lo, static_cast<double>(h.min()), static_cast<double>(h.max())));
  const float u = static_cast<float>(std::clamp(hi, static_cast<double>(h.min()), static_cast<double>(h.max())));
  return {std::min(l, u), std::max(l, u)};
}

// The |x| histogram: bin u covers [u * width, (u + 1) * width). Exact because 0 is an
// edge of the grid (grid bin t >= 0 is |x| bin t, t < 0 is |x| bin -t - 1); coarsened by
// a power of two when the data sits far from 0, so it never has more bins than `h`.
struct Folded {
  std::vector<double> counts;
  double width = 0;
  double top = 0;  // max |x|
};
Folded fold_abs(const HistogramObserver& h) {
  Folded f;
  int64_t umax = 0;
  for (int k = 0; k < h.bins(); ++k) {
    if (!h.counts()[k]) continue;
    const int64_t t = h.first_bin() + k;
    umax = std::max(umax, t >= 0 ? t : -t - 1);
  }
  int s = 0;
  while ((umax >> s) + 1 > h.bins()) ++s;
  f.counts.assign(static_cast<size_t>((umax >> s) + 1), 0.0);
  f.width = std::ldexp(h.bin_width(), s);
  f.top = std::max(std::fabs(static_cast<double>(h.min())), std::fabs(static_cast<double>(h.max())));
  for (int k = 0; k < h.bins(); ++k) {
    if (!h.counts()[k]) continue;
    const int64_t t = h.first_bin() + k;
    f.counts[static_cast<size_t>((t >= 0 ? t : -t - 1) >> s)] += static_cast<double>(h.counts()[k]);
  }
  return f;
}

// KL(P || Q) for the threshold at |x| bin i (bins [0, i) kept, the rest clipped into bin
// i - 1) quantized to `levels` levels, as TensorRT / MXNet compute it: Q merges the kept
// bins into `levels` groups and spreads each group's count evenly over the group's
// occupied bins. Zero bins of Q under occupied bins of P get 1e-4 of a count (the
// reference implementations' smoothing), which makes such thresholds expensive.
double kl_divergence(const std::vector<double>& f, size_t i, int levels, std::vector<double>& p,
                     std::vector<double>& q) {
  p.assign(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(i));
  for (size_t k = i; k < f.size(); ++k) p[i - 1] += f[k];
  q.assign(i, 0.0);
  const size_t per = i / static_cast<size_t>(levels);
  for (int j = 0; j < levels; ++j) {
    const size_t start = j * per, stop = j == levels - 1 ? i : start + per;
    double sum = 0, occupied = 0;
    for (size_t k = start; k < stop; ++k) {
      sum += f[k];
      occupied += p[k] != 0;
    }
    if (occupied == 0) continue;
    for (size_t k = start; k < stop; ++k) q[k] = p[k] != 0 ? sum / occupied : 0;
  }
  double ps = 0, qs = 0;
  for (size_t k = 0; k < i; ++k) ps += p[k], qs += q[k];
  if (ps == 0 || qs == 0) return std::numeric_limits<double>::infinity();
  double kl = 0;
  for (size_t k = 0; k < i; ++k) {
    if (p[k] == 0) continue;
    const double pk = p[k] / ps, qk = std::max(q[k], 1e-4) / qs;
    kl += pk * std::log(pk / qk);
  }
  return kl;
}

// Running clip cost of the bins beyond a moving bound: S0 = count, S1 = sum c * d,
// S2 = sum c * (d^2 + width^2 / 12) with d the distance from the bound to a bin's middle
// (the width term: values spread over the bin). Moving the bound away by delta keeps it
// exact: every d grows by delta. All terms are non-negative, so nothing cancels.
struct ClipSums {
  double s0 = 0, s1 = 0, s2 = 0;
  void move(double delta) {
    s2 += 2 * delta * s1 + delta * delta * s0;
    s1 += delta * s0;
  }
  void add(double c, double d, double width) {
    s0 += c;
    s1 += c * d;
    s2 += c * (d * d + width * width / 12);
  }
};

struct Bound {
  double value;
  double cost;     // squared error of the values it clips
  double clipped;  // how many values it clips
};

double mse_of(const Bound& lo, const Bound& hi, double total, int levels) {
  const double delta = (std::max(hi.value, 0.0) - std::min(lo.value, 0.0)) / (levels - 1);
  return lo.cost + hi.cost + (total - lo.clipped - hi.clipped) * delta * delta / 12;
}

}  // namespace

Range minmax_range(const MinMaxObserver& o) { return {o.min(), o.max()}; }
Range minmax_range(const HistogramObserver& h) { return {h.min(), h.max()}; }

Range percentile_range(const HistogramObserver& h, double percentile) {
  if (!(percentile >= 50 && percentile <= 100))
    fail(label(h), ": percentile must be in [50, 100], got ", percentile);
  if (h.min() == h.max() || percentile == 100) return minmax_range(h);
  const double q = percentile / 100;
  const double lo = h.min() >= 0 ? h.min() : quantile(h, 1 - q);
  const double hi = h.max() <= 0 ? h.max() : quantile(h, q);
  return clamp_range(h, lo, hi);
}

Range entropy_range(const HistogramObserver& h, int quant_levels) {
  check_levels(h, quant_levels);
  if (h.min() == h.max()) return minmax_range(h);
  const bool one_sided = h.min() >= 0 || h.max() <= 0;
  const int levels = one_sided ? quant_levels : quant_levels / 2;
  Folded f = fold_abs(h);
  const size_t n = f.counts.size();
  if (n <= static_cast<size_t>(levels)) return minmax_range(h);
  // The bin at 0 takes its neighbour's count, as NVIDIA's calibrator does: a spike of
  // exact zeros (ReLU, padding, masks) is exact under any scale, but left in, it makes
  // every merge of the first bins look costly and drags the threshold down.
  f.counts[0] = f.counts[1];
  const size_t stride = std::max<size_t>(1, (n - levels) / 128);
  std::vector<double> p, q;
  size_t best = n;
  double best_kl = std::numeric_limits<double>::infinity();
  for (size_t i = levels;; i = std::min(i + stride, n)) {
    const double kl = kl_divergence(f.counts, i, levels, p, q);
    if (kl < best_kl) best_kl = kl, best = i;
    if (i == n) break;
  }
  const double t = std::min(static_cast<double>(best) * f.width, f.top);
  return clamp_range(h, -t, t);
}

Range mse_range(const HistogramObserver& h, int quant_levels, bool symmetric) {
  check_levels(h, quant_levels);
  if (h.min() == h.max()) return minmax_range(h);
  const double total = static_cast<double>(h.count());
  if (symmetric) {
    const Folded f = fold_abs(h);
    const double steps = quant_levels / 2 - 1;
    // Thresholds T = j * width for every |x| bin edge below the top, and the top itself.
    ClipSums sums;
    double best_t = f.top, best = total * (f.top / steps) * (f.top / steps) / 12;
    double prev = f.top;
    for (size_t j = f.counts.size(); j-- > 1;) {
      const double t = static_cast<double>(j) * f.width;
      sums.move(prev - t);
      const double hi = std::min(t + f.width, f.top);
      sums.add(f.counts[j], 0.5 * (t + hi) - t, hi - t);
      prev = t;
      const double err = sums.s2 + (total - sums.s0) * (t / steps) * (t / steps) / 12;
      if (err < best) best = err, best_t = t;
    }
    return clamp_range(h, -best_t, best_t);
  }
  // Candidate bounds: lo = min or an edge <= 0, hi = max or an edge >= 0, each with the
  // cost of what it clips, built outward-in from the occupied bins [a, b].
  int a = 0, b = h.bins() - 1;
  while (!h.counts()[a]) ++a;
  while (!h.counts()[b]) --b;
  std::vector<Bound> los{{h.min(), 0, 0}}, his{{h.max(), 0, 0}};
  ClipSums below, above;
  for (int j = a + 1; j <= b; ++j) {  // lo at edge j clips bins [a, j)
    const Extent e = extent(h, j - 1);
    below.move(h.bin_width());
    below.add(static_cast<double>(h.counts()[j - 1]), h.bin_lo(j) - e.mid(), e.hi - e.lo);
    if (h.bin_lo(j) <= 0) los.push_back({h.bin_lo(j), below.s2, below.s0});
  }
  for (int j = b; j > a; --j) {  // hi at edge j clips bins [j, b]
    const Extent e = extent(h, j);
    above.move(h.bin_width());
    above.add(static_cast<double>(h.counts()[j]), e.mid() - h.bin_lo(j), e.hi - e.lo);
    if (h.bin_lo(j) >= 0) his.push_back({h.bin_lo(j), above.s2, above.s0});
  }
  // Coarse grid over both lists, then every pair within one stride of the best.
  const size_t sl = std::max<size_t>(1, los.size() / 128), sh = std::max<size_t>(1, his.size() / 128);
  size_t bl = 0, bh = 0;
  double best = std::numeric_limits<double>::infinity();
  auto consider = [&](size_t l, size_t u) {
    if (los[l].value >= his[u].value) return;
    const double err = mse_of(los[l], his[u], total, quant_levels);
    if (err < best) best = err, bl = l, bh = u;
  };
  for (size_t l = 0; l < los.size(); l += sl)
    for (size_t u = 0; u < his.size(); u += sh) consider(l, u);
  const size_t cl = bl, ch = bh;
  for (size_t l = cl > sl ? cl - sl : 0; l <= std::min(los.size() - 1, cl + sl); ++l)
    for (size_t u = ch > sh ? ch - sh : 0; u <= std::min(his.size() - 1, ch + sh); ++u) consider(l, u);
  return clamp_range(h, los[bl].value, his[bh].value);
}

Range keep_outlier_channels(Range r, const std::vector<float>& channel_min, const std::vector<float>& channel_max,
                            double ratio) {
  if (channel_min.size() != channel_max.size())
    fail("keep_outlier_channels: ", channel_min.size(), " channel minima but ", channel_max.size(), " maxima");
  std::vector<float> abs_max;
  for (size_t j = 0; j < channel_min.size(); ++j)
    if (channel_min[j] <= channel_max[j]) abs_max.push_back(std::max(std::fabs(channel_min[j]), std::fabs(channel_max[j])));
  if (abs_max.size() < 2) return r;
  std::vector<float> sorted(abs_max);
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  const double threshold = ratio * sorted[sorted.size() / 2];
  for (size_t j = 0; j < channel_min.size(); ++j) {
    if (channel_min[j] > channel_max[j]) continue;
    const double a = std::max(std::fabs(channel_min[j]), std::fabs(channel_max[j]));
    if (a == 0 || a < threshold) continue;
    r.lo = std::min(r.lo, channel_min[j]);
    r.hi = std::max(r.hi, channel_max[j]);
  }
  return r;
}

Range keep_recurring_extremes(Range r, std::vector<float> sample_min, std::vector<float> sample_max) {
  if (sample_min.size() != sample_max.size())
    fail("keep_recurring_extremes: ", sample_min.size(), " sample minima but ", sample_max.size(), " maxima");
  if (sample_max.empty()) return r;
  // The maximum that all but the top 10% of samples stay under (nearest rank below): with
  // ten samples, the second largest; with two, the smaller.
  const auto rank = static_cast<std::ptrdiff_t>((sample_max.size() - 1) * 9 / 10);
  std::nth_element(sample_max.begin(), sample_max.begin() + rank, sample_max.end());
  std::nth_element(sample_min.begin(), sample_min.begin() + rank, sample_min.end(), std::greater<float>());
  r.hi = std::max(r.hi, sample_max[static_cast<size_t>(rank)]);
  r.lo = std::min(r.lo, sample_min[static_cast<size_t>(rank)]);
  return r;
}

}  // namespace octet::quant
