// Helpers for the optimized CPU kernel tests: run one op through a Session with the
// optimized or the reference kernels, at every ISA level the machine has, and compare.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"
#include "kernels/dispatch/cpu_features.h"
#include "kernels/kernel.h"
#include "runtime/session.h"

namespace octet::testing {

// One kernel's best time per call in microseconds: 5 rounds, each calling `fn` on `node`
// until `round_us` have passed, the fastest round's mean. For the printed (never asserted)
// timings of the bench tests.
inline double best_us_per_call(const Node& node, const std::vector<const Tensor*>& inputs, KernelFn fn,
                               double round_us) {
  using Clock = std::chrono::steady_clock;
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    int calls = 0;
    const auto start = Clock::now();
    double elapsed = 0;
    do {
      KernelContext ctx(node, inputs);
      fn(ctx);
      ++calls;
      elapsed = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    } while (elapsed < round_us);
    best = std::min(best, elapsed / calls);
  }
  return best;
}

struct CpuCall {
  std::string op;
  std::vector<std::optional<Tensor>> inputs;  // nullopt = omitted optional input
  std::vector<Attribute> attrs = {};
  std::string domain = "";
  int64_t opset = 23;
  int num_outputs = 1;
  int threads = 1;
};

inline std::shared_ptr<const Graph> one_node_graph(const CpuCall& call) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = call.opset;
  if (!call.domain.empty()) g->opset_imports[call.domain] = 1;
  std::vector<std::string> in_names, out_names;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (!call.inputs[i]) {
      in_names.push_back("");
      continue;
    }
    const Tensor& t = *call.inputs[i];
    in_names.push_back("in" + std::to_string(i));
    g->add_input(in_names.back(), TensorType(t.dtype(), DimVector(t.shape().begin(), t.shape().end())));
  }
  for (int i = 0; i < call.num_outputs; ++i) out_names.push_back("out" + std::to_string(i));
  g->add_node(call.op, in_names, out_names, call.attrs, call.domain, "node_under_test");
  for (const std::string& name : out_names) g->mark_output(g->value(name));
  return g;
}

// Runs the call; `optimized` receives how many nodes ran an optimized kernel.
inline std::vector<Tensor> run_call(const CpuCall& call, KernelChoice choice, int* optimized = nullptr) {
  SessionOptions options;
  options.kernels = choice;
  options.threads = call.threads;
  Session session(one_node_graph(call), options);
  if (optimized) *optimized = session.optimized_nodes();
  NamedTensors feeds;
  for (size_t i = 0; i < call.inputs.size(); ++i)
    if (call.inputs[i]) feeds.emplace_back("in" + std::to_string(i), *call.inputs[i]);
  std::vector<Tensor> outs;
  for (auto& [name, t] : session.run(feeds)) outs.push_back(t);
  return outs;
}

// Deterministic uniform values in [lo, hi].
// max |got - want| over max |want| (float tensors of one shape; infinity when the shapes
// differ, which is also a test failure): one number for "equal up to float rounding".
inline double max_relative_error(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  if (got.shape() != want.shape()) return INFINITY;
  double diff = 0, mag = 1e-12;
  for (int64_t i = 0; i < want.numel(); ++i) {
    diff = std::max(diff, double(std::fabs(got.data<float>()[i] - want.data<float>()[i])));
    mag = std::max(mag, double(std::fabs(want.data<float>()[i])));
  }
  return diff / mag;
}

inline Tensor random_f32(std::vector<int64_t> shape, uint32_t seed, float lo = -3.0f, float hi = 3.0f) {
  Tensor t(DType::Float32, std::move(shape));
  uint64_t s = 0x9E3779B97F4A7C15ull * (seed + 1);
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = lo + (hi - lo) * static_cast<float>(s >> 40) / static_cast<float>(1ull << 24);
  }
  return t;
}

// |got - want| <= atol + rtol * |want|; exact compares bits (NaN matches NaN).
struct Tolerance {
  double rtol = 0, atol = 0;
  bool exact = false;
};
inline constexpr Tolerance kExact{0, 0, true};

// Compares and returns the largest |got - want| / max(|want|, atol / rtol): the error
// measured against the tolerance's own scale, for reporting.
inline double expect_close(const Tensor& got, const Tensor& want, Tolerance tol, const std::string& what) {
  EXPECT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_EQ(got.shape(), want.shape()) << what;
  if (got.shape() != want.shape() || got.dtype() != DType::Float32) return INFINITY;
  const float* a = got.data<float>();
  const float* b = want.data<float>();
  double worst = 0;
  int reported = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const bool both_nan = std::isnan(a[i]) && std::isnan(b[i]);
    bool ok;
    if (tol.exact) ok = both_nan || std::memcmp(&a[i], &b[i], 4) == 0;
    else if (std::isnan(b[i]) || std::isinf(b[i])) ok = both_nan || a[i] == b[i];
    else {
      const double err = std::fabs(static_cast<double>(a[i]) - b[i]);
      ok = err <= tol.atol + tol.rtol * std::fabs(b[i]);
      if (tol.rtol > 0) worst = std::max(worst, err / std::max<double>(std::fabs(b[i]), tol.atol / tol.rtol));
    }
    if (!ok && reported++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << a[i] << ", reference " << b[i];
  }
  return worst;
}

// Runs `call` with the reference kernels, then with the optimized ones at every level in
// available_isas(), expecting the optimized kernel to take the node and match.
inline double expect_matches_reference(const CpuCall& call, Tolerance tol, const std::string& what = "") {
  const std::vector<Tensor> want = run_call(call, KernelChoice::Reference);
  double worst = 0;
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    int optimized = 0;
    const std::vector<Tensor> got = run_call(call, KernelChoice::Optimized, &optimized);
    const std::string label = call.op + " " + what + " at " + isa_name(level);
    EXPECT_EQ(optimized, 1) << label << ": the optimized kernel declined the node";
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, expect_close(got.at(i), want[i], tol, label));
  }
  return worst;
}

}  // namespace octet::testing
