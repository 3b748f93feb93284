// Timings of the optimized kernels per ISA level next to the reference kernel, printed
// for the record (no assertions: speed is measured, never asserted in unit tests).
// Single-threaded; each number is the best of several batches of calls.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "cpu_test_util.h"
#include "kernels/kernel.h"

namespace octet::testing {
namespace {

TEST(CpuBench, PrintKernelTimings) {
  for (int64_t hidden : {64, 768}) {
    const std::vector<int64_t> shape = {1, 128, hidden};
    const Tensor x = random_f32(shape, 1), y = random_f32(shape, 2), gamma = random_f32({hidden}, 3),
                 beta = random_f32({hidden}, 4), bias = random_f32({hidden}, 5);
    struct Case {
      const char* label;
      CpuCall call;
    };
    const Case cases[] = {
        {"LayerNorm", {"LayerNormalization", {x, gamma, beta}}},
        {"Softmax", {"Softmax", {x}}},
        {"Gelu(erf)", {"Gelu", {x}}},
        {"Gelu(tanh)", {"Gelu", {x}, {Attribute::make_string("approximate", "tanh")}}},
        {"Add same", {"Add", {x, y}}},
        {"Add [H]", {"Add", {x, bias}}},
    };
    for (const Case& c : cases) {
      auto g = one_node_graph(c.call);
      const Node& node = *g->nodes().at(0);
      std::vector<const Tensor*> in;
      for (const auto& t : c.call.inputs) in.push_back(&*t);
      const double ref = best_us_per_call(node, in, KernelRegistry::reference().find(node.domain(), node.op_type()), 2000);
      std::printf("[ timing   ] %-10s %-12s reference %8.1f us", c.label, shape_to_string(shape).c_str(), ref);
      for (IsaLevel level : available_isas()) {
        ScopedIsaLevel scoped(level);
        const double t = best_us_per_call(node, in, KernelRegistry::optimized().find(node.domain(), node.op_type()), 2000);
        std::printf(" | %s %7.2f us (%.0fx)", isa_name(level), t, ref / t);
      }
      std::printf("\n");
    }
  }
}

}  // namespace
}  // namespace octet::testing
