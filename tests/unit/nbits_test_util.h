// What the MatMulNBits kernel tests share (cpu_matmul_nbits_test.cpp,
// cpu_matmul_nbits_packed_test.cpp): a case's shape, weights with zero points at both
// ends, the one-node graph, a scope that sets the decode GEMV's activation precision, and
// the check the MatMulNBits fusion tests (pass_fuse_nbits_*_test.cpp) end with.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cpu_test_util.h"
#include "kernels/cpu/matmul_nbits.h"
#include "kernels/dispatch/cpu_features.h"
#include "runtime/session.h"
#include "quant/block_quant.h"

namespace octet::testing {

struct NbitsCase {
  int bits = 4;
  int64_t K = 64, N = 8, block = 32;
  bool symmetric = true;
  std::vector<int64_t> a_shape = {1, 64};
  bool bias = false;
  int threads = 1;
  std::string label() const {
    std::string s = "bits " + std::to_string(bits) + " K " + std::to_string(K) + " N " + std::to_string(N) + " block " +
                    std::to_string(block) + (symmetric ? " sym" : " asym") + " A [";
    for (int64_t d : a_shape) s += std::to_string(d) + ",";
    return s + "]" + (bias ? " bias" : "") + " threads " + std::to_string(threads);
  }
};

// Weights in [-1, 1], except that column 0's first block is all >= 0 (zero point 0 when
// asymmetric) and column 1's (when N > 1) all <= 0 (zero point 2^bits - 1).
inline Tensor nbits_weights(int64_t K, int64_t N, uint32_t seed, int64_t block) {
  Tensor w = random_f32({K, N}, seed, -1.0f, 1.0f);
  float* p = w.mutable_data<float>();
  for (int64_t k = 0; k < std::min(K, block); ++k) {
    p[k * N] = std::fabs(p[k * N]);
    if (N > 1) p[k * N + 1] = -std::fabs(p[k * N + 1]);
  }
  return w;
}

inline std::shared_ptr<Graph> nbits_graph(const NbitsCase& c, const quant::NbitsTensors& t, const Tensor* bias) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 21;
  g->opset_imports["com.microsoft"] = 1;
  g->add_input("A", TensorType(DType::Float32, DimVector(c.a_shape.begin(), c.a_shape.end())));
  g->add_initializer("B", std::make_shared<Tensor>(t.b));
  g->add_initializer("scales", std::make_shared<Tensor>(t.scales));
  std::vector<std::string> ins = {"A", "B", "scales"};
  if (t.zero_points) g->add_initializer("zp", std::make_shared<Tensor>(*t.zero_points));
  ins.push_back(t.zero_points ? "zp" : "");
  if (bias) {
    g->add_initializer("bias", std::make_shared<Tensor>(*bias));
    ins.push_back("");
    ins.push_back("bias");
  }
  g->add_node("MatMulNBits", ins, {"Y"},
              {Attribute::make_int("K", c.K), Attribute::make_int("N", c.N), Attribute::make_int("bits", c.bits),
               Attribute::make_int("block_size", c.block)},
              "com.microsoft", "nbits_under_test");
  g->mark_output(g->value("Y"));
  return g;
}

class ActivationsScope {  // the decode GEMV's activation precision for its lifetime
 public:
  explicit ActivationsScope(cpu::NbitsActivations mode) : previous_(cpu::nbits_activations()) {
    cpu::set_nbits_activations(mode);
  }
  ~ActivationsScope() { cpu::set_nbits_activations(previous_); }

 private:
  cpu::NbitsActivations previous_;
};

// A rewrite of MatMulNBits nodes changes no number: the rewritten graph gives the original's
// outputs byte for byte on both decode-GEMV activation precisions, at every ISA level, at 1
// and 2 threads, and runs no more reference kernels than the original (none, in the
// fusion tests; a MatMulNBits with a non-constant B runs one either way). The fusion and
// merge tests' last check.
inline void expect_nbits_rewrite_identical(const std::shared_ptr<Graph>& rewritten,
                                           const std::shared_ptr<Graph>& original, const NamedTensors& in,
                                           const std::string& label) {
  for (cpu::NbitsActivations mode : {cpu::NbitsActivations::Auto, cpu::NbitsActivations::Float}) {
    ActivationsScope scope(mode);
    for (IsaLevel level : available_isas())
      for (int threads : {1, 2}) {
        ScopedIsaLevel scoped(level);
        SessionOptions o;
        o.threads = threads;
        Session got(rewritten, o), want(original, o);
        EXPECT_LE(got.reference_ops().size(), want.reference_ops().size())
            << "a rewritten node fell back to the reference kernel";
        const NamedTensors g = got.run(in), w = want.run(in);
        const std::string where = label + " " + isa_name(level) + " threads " + std::to_string(threads) +
                                  (mode == cpu::NbitsActivations::Float ? " float" : " auto");
        ASSERT_EQ(g.size(), w.size()) << where;
        for (size_t i = 0; i < g.size(); ++i) {
          ASSERT_EQ(g[i].second.shape(), w[i].second.shape()) << where << " " << g[i].first;
          EXPECT_EQ(std::memcmp(g[i].second.raw(), w[i].second.raw(), w[i].second.bytes()), 0)
              << where << ": " << g[i].first << " differs";
        }
      }
  }
}

}  // namespace octet::testing
