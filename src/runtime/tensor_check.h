// Looking at results: summary statistics of a tensor, and element-wise comparison with
// expected values at numpy.allclose tolerances. `octet run` reports both; tests use the
// comparison to check octet against onnxruntime and torch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace octet {

struct TensorStats {
  int64_t count = 0;    // elements
  int64_t finite = 0;   // elements that are neither NaN nor infinite
  int64_t nan = 0, pos_inf = 0, neg_inf = 0;
  // Over the finite elements; nullopt when there are none or the dtype has no numbers
  // (strings). Integers up to 2^53 are exact; bool counts true as 1.
  std::optional<double> min, max, mean;
};
TensorStats tensor_stats(const Tensor& t);

struct Comparison {
  // Set when the tensors cannot be compared element-wise (dtype or shape differ); the
  // comparison then fails and the error fields stay 0.
  std::string problem;
  int64_t count = 0;       // elements compared
  int64_t mismatched = 0;  // elements outside atol + rtol * |expected|
  double max_abs_error = 0;
  // max |actual - expected| / |expected| over elements whose expected value is not 0.
  double max_rel_error = 0;
  // The element furthest outside its tolerance (when all are within it, the one with the
  // largest error); no index when every element is equal.
  std::optional<std::vector<int64_t>> worst_index;
  double worst_actual = 0, worst_expected = 0;

  bool ok() const { return problem.empty() && mismatched == 0; }
};
// numpy.allclose semantics, |a - e| <= atol + rtol * |e|, except that NaN matches NaN (as
// in ONNX's test runners) and equal infinities match. Integer and bool tensors compare
// exactly unless atol/rtol allow a difference; strings compare exactly.
Comparison compare_tensors(const Tensor& actual, const Tensor& expected, double rtol, double atol);

// The multi-index of flat element `flat` in a C-order tensor of `shape`.
std::vector<int64_t> unravel_index(int64_t flat, const std::vector<int64_t>& shape);

}  // namespace octet
