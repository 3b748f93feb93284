// Calibration ranges: the [lo, hi] an activation is quantized over, from an observer.
//
// Every function returns a range inside the observed [min, max] (clipping never widens),
// with lo <= hi; activation_params (quant/quant_params.h) then adds 0 to it. A tensor whose
// finite values were all equal gets [v, v]. A tensor with no finite value is an error
// naming it (from the observer).
//
// Histogram-based ranges treat the values in a bin as spread evenly over it, except that
// the lowest and highest occupied bins are cut to the exact [min, max].
#pragma once

#include <vector>

#include "quant/observers.h"

namespace octet::quant {

struct Range {
  float lo = 0, hi = 0;
};

Range minmax_range(const MinMaxObserver& observer);
Range minmax_range(const HistogramObserver& observer);

// hi: the value below which `percentile` % of the values lie; lo: the value below which
// (100 - percentile) % lie. A tensor with no negative value keeps lo = min (ReLU, softmax
// outputs: clipping the low end only moves the zero point), and one with no positive
// value keeps hi = max. percentile in [50, 100]; 100 gives [min, max].
Range percentile_range(const HistogramObserver& observer, double percentile);

// TensorRT's entropy calibration: the clipping threshold T whose quantized distribution
// has the least KL divergence from the observed one. On the |x| histogram (exact, as 0 is
// a bin edge) with quant_levels / 2 levels for T (int8's positive half), the result being
// [max(-T, min), min(T, max)]. Data of one sign (all >= 0 or all <= 0) gets all
// quant_levels levels on its side, as an asymmetric uint8 grid gives it. Thresholds are
// tried on a stride of bins (at most ~128 candidates), so it takes a few ms at 2048 bins.
// When the histogram has no more bins than levels, nothing is clipped. The |x| bin at 0
// is given its neighbour's count first (as NVIDIA's calibrator does), so a spike of exact
// zeros, which quantize exactly anyway, does not pull T down.
Range entropy_range(const HistogramObserver& observer, int quant_levels = 256);

// The range minimizing the expected squared quantization error, estimated from the
// histogram: clipped values cost (x - bound)^2, values inside cost delta^2 / 12 (uniform
// rounding noise), where delta = (max(hi, 0) - min(lo, 0)) / (quant_levels - 1) is the
// step activation_params would give (asymmetric, uint8 by default). With `symmetric`,
// one threshold T for both sides and delta = T / (quant_levels / 2 - 1) (int8 symmetric).
// Bounds are searched on bin edges (lo <= 0 <= hi, unless the data lies on one side of 0),
// on a coarse stride and then refined around the best pair.
Range mse_range(const HistogramObserver& observer, int quant_levels = 256, bool symmetric = false);

// A clipping method's range widened to cover every outlier channel whole: channel j (of the
// tensor's last axis, whose per-channel [min, max] the caller observed) is an outlier when
// its max |x| is at least `ratio` times the median channel's. Decoder LLMs carry a few such
// channels on every token (10-1000x the rest) and depend on them: percentile and entropy
// count them as a sliver of the histogram and clip them, which wrecks the model, while
// sporadic large values elsewhere may still be clipped. Never narrows `r`; returns it
// unchanged without channels or with none that stands out.
Range keep_outlier_channels(Range r, const std::vector<float>& channel_min, const std::vector<float>& channel_max,
                            double ratio = 4);

// A clipping method's range widened to the extremes all but a few calibration samples
// reach: the 90th percentile over samples of each sample's max (and the 10th of each
// sample's min). A magnitude most samples reach is part of how the model works, not noise
// to clip: ViTs (DINOv2) put "massive activations" on a few tokens of every image, spread
// over all the channels of V, so no channel stands out to keep_outlier_channels, and
// percentile 99.99 clipped them (held-out CLS cosine 0.9959 with minmax; percentile
// 0.9655, entropy 0.9569, mse 0.9840 without this guard; 0.9958 / 0.9958 (mse) with it;
// the median over samples instead of the 90th percentile left 0.9949). Extremes only a
// few samples reach may still be clipped. Never narrows `r`; nothing changes without
// samples.
Range keep_recurring_extremes(Range r, std::vector<float> sample_min, std::vector<float> sample_max);

}  // namespace octet::quant
