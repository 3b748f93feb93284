// The check the int8 fusion tests end with: a rewrite of quantized nodes changes no number.
// Both graphs run on the same inputs with the reference kernels and with the optimized
// ones at 1 and 2 threads; every output must have the same bytes, and the rewritten graph
// must run no reference op and no int8 kernel's reference fallback (else the comparison
// would test the reference twice).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "kernels/cpu/quant_ops.h"
#include "pass_test_util.h"

namespace octet::testing {

inline void expect_same_bits(const NamedTensors& want, const NamedTensors& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(want[i].second.bytes(), got[i].second.bytes()) << what << ": output " << want[i].first;
    EXPECT_EQ(std::memcmp(want[i].second.raw(), got[i].second.raw(), got[i].second.bytes()), 0)
        << what << ": output " << want[i].first;
  }
}

inline void expect_rewrite_keeps_bits(const std::shared_ptr<Graph>& original, const std::shared_ptr<Graph>& rewritten,
                                      const NamedTensors& in) {
  expect_same_bits(run_graph_with(original, in, KernelChoice::Reference),
                   run_graph_with(rewritten, in, KernelChoice::Reference), "reference kernels");
  for (int threads : {1, 2}) {
    SessionOptions opts;
    opts.threads = threads;
    Session a(std::shared_ptr<const Graph>(original), opts), r(std::shared_ptr<const Graph>(rewritten), opts);
    EXPECT_TRUE(r.reference_ops().empty());
    const int64_t fallbacks = cpu::int8_reference_runs();
    const NamedTensors want = a.run(in), got = r.run(in);
    EXPECT_EQ(cpu::int8_reference_runs(), fallbacks) << "an int8 kernel ran the reference";
    expect_same_bits(want, got, "optimized kernels, threads " + std::to_string(threads));
  }
}

}  // namespace octet::testing
