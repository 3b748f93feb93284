// Helpers for the oneDNN matmul kernel tests: one-node graphs whose operands are graph
// inputs or constants, run on the optimized and the reference kernels and compared with
// a tolerance that grows with K (float32 sums in a different order).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ir/graph.h"
#include "kernels/cpu/dnnl_matmul.h"
#include "ops/infer.h"
#include "runtime/session.h"

namespace octet::testing::mm {

// Deterministic values in [-1, 1] (a 64-bit LCG), different per seed.
inline Tensor rand(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t(DType::Float32, std::move(shape));
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<float>(static_cast<double>(s >> 40) / static_cast<double>(1ull << 23) - 1.0);
  }
  return t;
}

struct Operand {
  Tensor value;
  bool constant = false;     // an initializer (not a graph input)
  std::optional<DimVector> dims = std::nullopt;  // declared input dims (symbols); default: value's shape
};

// Graph(inputs -> op -> "y"). A nullopt operand is an omitted optional input.
inline std::shared_ptr<Graph> one_node(const std::string& op, const std::vector<std::optional<Operand>>& ins,
                                       std::vector<Attribute> attrs = {}, const std::string& domain = "",
                                       int64_t opset = 17) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = opset;
  if (!domain.empty()) g->opset_imports[domain] = 1;
  std::vector<std::string> names;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!ins[i]) {
      names.push_back("");
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    const Tensor& t = ins[i]->value;
    if (ins[i]->constant) g->add_initializer(name, std::make_shared<Tensor>(t));
    else g->add_input(name, TensorType(t.dtype(), ins[i]->dims ? *ins[i]->dims : DimVector(t.shape().begin(), t.shape().end())));
    names.push_back(name);
  }
  g->add_node(op, names, {"y"}, std::move(attrs), domain, "node_under_test");
  g->mark_output(g->value("y"));
  infer_graph(*g);
  return g;
}

// The graph inputs' values, for Session::run.
inline NamedTensors feeds(const std::vector<std::optional<Operand>>& ins) {
  NamedTensors out;
  for (size_t i = 0; i < ins.size(); ++i)
    if (ins[i] && !ins[i]->constant) out.emplace_back("in" + std::to_string(i), ins[i]->value);
  return out;
}

inline Session session(const std::shared_ptr<Graph>& g, KernelChoice kernels, int threads = 1) {
  SessionOptions o;
  o.kernels = kernels;
  o.threads = threads;
  return Session(std::shared_ptr<const Graph>(g), o);
}

// |got - want| <= tol(K) elementwise, tol = 4 K eps max|A| max|B| + 8 eps |want|: the
// worst-case growth of a float32 dot product of length K summed in any order, plus the
// epilogue's own rounding. Values here are in [-1, 1], so max|A| = max|B| = 1.
inline void expect_close(const Tensor& got, const Tensor& want, int64_t k, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  std::vector<float> g = got.to_float_vector(), w = want.to_float_vector();
  const double base = 4.0 * static_cast<double>(std::max<int64_t>(k, 1)) * FLT_EPSILON;
  int reported = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double tol = base + 8.0 * FLT_EPSILON * std::fabs(w[i]);
    if (std::fabs(static_cast<double>(g[i]) - w[i]) > tol || std::isnan(g[i]) != std::isnan(w[i])) {
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", reference " << w[i] << " (tol " << tol << ")";
      if (++reported == 5) return;
    }
  }
}

// Runs `op` on the optimized and the reference kernels and compares. Returns how many
// nodes ran an optimized kernel (1 when the oneDNN kernel took the node).
inline int check_against_reference(const std::string& op, const std::vector<std::optional<Operand>>& ins,
                                   std::vector<Attribute> attrs, int64_t k, const std::string& what,
                                   const std::string& domain = "", int threads = 1) {
  auto g = one_node(op, ins, std::move(attrs), domain);
  Session fast = session(g, KernelChoice::Optimized, threads), ref = session(g, KernelChoice::Reference);
  NamedTensors in = feeds(ins);
  NamedTensors got = fast.run(in), want = ref.run(in);
  expect_close(got[0].second, want[0].second, k, what);
  return fast.optimized_nodes();
}

// The state a session would build for `g`'s one node, and a runner that feeds the
// kernel by hand: tests read the state's counters.
struct DirectKernel {
  std::shared_ptr<Graph> g;
  std::unique_ptr<KernelState> state;
  const KernelDef* def = nullptr;

  explicit DirectKernel(std::shared_ptr<Graph> graph) : g(std::move(graph)) {
    const Node& n = *g->nodes()[0];
    def = KernelRegistry::optimized().find_def(n.domain(), n.op_type());
    EXPECT_TRUE(def && def->prepare(n, state));
  }
  const dnnl_cpu::MatMulState& matmul() const { return static_cast<const dnnl_cpu::MatMulState&>(*state); }
  Tensor run(std::vector<const Tensor*> inputs, int threads = 1) const { return run_all(std::move(inputs), threads)[0]; }
  // Every output (octet.MatMulBias' `split` parts).
  std::vector<Tensor> run_all(std::vector<const Tensor*> inputs, int threads = 1) const {
    KernelContext ctx(*g->nodes()[0], std::move(inputs));
    ctx.set_state(state.get());
    ctx.set_threads(threads);
    def->run(ctx);
    return ctx.outputs();
  }
};

inline std::string shape_str(const std::vector<int64_t>& s) { return shape_to_string(s); }
// "[m,k]x[k,n]": a product's label in failure messages.
inline std::string dims_label(const std::vector<int64_t>& a, int64_t k, int64_t n) {
  return shape_str(a) + "x[" + std::to_string(k) + "," + std::to_string(n) + "]";
}

// A one-node case for the kernels on oneDNN's packed panels (the decode GEMV, the panel
// GEMM): what to run, and whether the kernel under test should take it.
struct PackedCase {
  std::string op, domain;
  std::vector<std::optional<Operand>> ins;
  std::vector<Attribute> attrs;
  int64_t k = 0;
  bool taken = true;
  std::string label;
};

// octet.MatMulBias with m rows of A for each m in `rows`: no activation and both GeLUs, each
// with no residual, one of Y's shape and one row repeated; K and N off the 16-row and
// 64-column blocks.
inline std::vector<PackedCase> epilogue_cases(const std::vector<int64_t>& rows) {
  std::vector<PackedCase> out;
  uint64_t seed = 100;
  for (const char* act : {"", "gelu", "gelu_tanh"})
    for (int64_t m : rows)
      for (auto [k, n] : {std::pair<int64_t, int64_t>{33, 65}, {200, 130}}) {
        const std::vector<int64_t> y = {1, m, n};
        for (std::optional<std::vector<int64_t>> r :
             {std::optional<std::vector<int64_t>>{}, std::optional(y), std::optional(std::vector<int64_t>{n})}) {
          PackedCase c;
          c.op = "MatMulBias", c.domain = "octet", c.k = k;
          c.ins = {Operand{rand({1, m, k}, seed++)}, Operand{rand({k, n}, seed++), true}, Operand{rand({n}, seed++), true}};
          if (r) c.ins.push_back(Operand{rand(*r, seed++)});
          if (*act) c.attrs.push_back(Attribute::make_string("activation", act));
          c.label = std::string("MatMulBias '") + act + "' " + dims_label({1, m, k}, k, n) + " residual " +
                    (r ? shape_str(*r) : "none");
          out.push_back(std::move(c));
        }
      }
  return out;
}

// Gemm with m rows of A and B transposed or not: no C, a bias row ([N] or [1, N]) and a C of
// Y's shape are taken; a C repeated over columns and alpha / beta != 1 (oneDNN's output
// scale) are not.
inline std::vector<PackedCase> gemm_c_cases(int64_t m) {
  const int64_t k = 71, n = 97;
  auto attrs = [](float alpha, float beta, bool tb) {
    return std::vector<Attribute>{Attribute::make_float("alpha", alpha), Attribute::make_float("beta", beta),
                                  Attribute::make_int("transA", 0), Attribute::make_int("transB", tb ? 1 : 0)};
  };
  std::vector<PackedCase> out;
  for (bool tb : {false, true}) {
    const Tensor b = rand(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, 2);
    for (std::vector<int64_t> c : {std::vector<int64_t>{}, {n}, {1, n}, {m, n}, {m, 1}}) {
      PackedCase g;
      g.op = "Gemm", g.attrs = attrs(1.0f, 1.0f, tb), g.k = k;
      g.ins = {Operand{rand({m, k}, 1)}, Operand{b, true}};
      if (!c.empty()) g.ins.push_back(Operand{rand(c, 3), true});
      g.taken = c != std::vector<int64_t>{m, 1};
      g.label = "Gemm transB " + std::to_string(tb) + " C " + shape_str(c);
      out.push_back(std::move(g));
    }
    out.push_back({"Gemm", "", {Operand{rand({m, k}, 1)}, Operand{b, true}, Operand{rand({n}, 3), true}},
                   attrs(0.5f, 2.0f, tb), k, false, "Gemm alpha 0.5 beta 2 transB " + std::to_string(tb)});
  }
  return out;
}

// The panel GEMM (dnnl_matmul_panel_gemm.cpp) switched off while in scope: tests of what
// oneDNN's matmul does at shapes the panel GEMM would otherwise take.
struct PanelGemmOff {
  PanelGemmOff() { dnnl_cpu::set_f32_panel_gemm_enabled(false); }
  ~PanelGemmOff() { dnnl_cpu::set_f32_panel_gemm_enabled(true); }
  PanelGemmOff(const PanelGemmOff&) = delete;
  PanelGemmOff& operator=(const PanelGemmOff&) = delete;
};

// Two threads run `fast` on `inputs` for `rounds` rounds, walking the shapes in opposite
// orders so they create and reuse cached primitives concurrently; each thread's last
// round must match `want` (tolerance as expect_close with contraction length k).
inline void expect_concurrent_runs_match(const Session& fast, const std::vector<Tensor>& inputs,
                                         const std::vector<Tensor>& want, int rounds, int64_t k) {
  auto order = [&](int t, size_t i) { return t == 0 ? i : inputs.size() - 1 - i; };
  std::vector<std::vector<Tensor>> got(2);
  auto work = [&](int t) {
    for (int round = 0; round < rounds; ++round)
      for (size_t i = 0; i < inputs.size(); ++i) {
        Tensor y = fast.run({{"in0", inputs[order(t, i)]}})[0].second;
        if (round == rounds - 1) got[t].push_back(y);
      }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  for (int t = 0; t < 2; ++t)
    for (size_t i = 0; i < inputs.size(); ++i)
      expect_close(got[t][i], want[order(t, i)], k,
                   "thread " + std::to_string(t) + " shape " + std::to_string(order(t, i)));
}

// The best of several runs (after one warm-up run that creates the primitive), in
// seconds: at least 3 and at most `max_runs`, until `budget_s` is spent.
inline double best_run(const Session& s, const NamedTensors& in, double budget_s, int max_runs) {
  s.run(in);
  double best = 1e30, spent = 0;
  for (int i = 0; i < max_runs && (i < 3 || spent < budget_s); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    s.run(in);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, t);
    spent += t;
  }
  return best;
}

}  // namespace octet::testing::mm
