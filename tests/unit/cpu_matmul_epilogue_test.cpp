// octet.MatMulBias with its epilogue (bias, activation, residual): the inference rule,
// the reference kernel (the unfused graph, bit for bit) and the oneDNN kernel against it.
#include <gtest/gtest.h>

#include "cpu_matmul_test_util.h"
#include "pass_test_util.h"

namespace octet {
namespace {

using testing::mm::check_against_reference;
using testing::mm::Operand;
using testing::mm::rand;
using testing::mm::shape_str;

std::vector<Attribute> act_attr(const std::string& act) {
  if (act.empty()) return {};
  return {Attribute::make_string("activation", act)};
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CpuMatMulEpilogue, InferenceChecksActivationAndResidual) {
  auto build = [](const std::string& act, std::optional<DimVector> residual) {
    auto g = std::make_shared<Graph>();
    g->opset_imports[""] = 17;
    g->opset_imports["octet"] = 1;
    g->add_input("x", TensorType(DType::Float32, DimVector{Dim::symbol("batch"), Dim::symbol("seq"), 4}));
    g->add_input("w", TensorType(DType::Float32, DimVector{4, 6}));
    g->add_input("b", TensorType(DType::Float32, DimVector{6}));
    std::vector<std::string> ins = {"x", "w", "b"};
    if (residual) {
      g->add_input("r", TensorType(DType::Float32, *residual));
      ins.push_back("r");
    }
    g->add_node("MatMulBias", ins, {"y"}, act_attr(act), "octet", "mmb");
    g->mark_output(g->value("y"));
    infer_graph(*g);
    return g;
  };
  auto ok = build("gelu", DimVector{Dim::symbol("batch"), Dim::symbol("seq"), 6});
  EXPECT_EQ(dims_to_string(*ok->value("y")->type.dims), "[batch,seq,6]");
  EXPECT_NO_THROW(build("gelu_tanh", DimVector{6}));
  EXPECT_NO_THROW(build("", DimVector{1, 6}));
  EXPECT_NE(error_of([&] { build("relu", std::nullopt); }).find("activation must be"), std::string::npos);
  EXPECT_NE(error_of([&] { build("", DimVector{2, Dim::symbol("batch"), Dim::symbol("seq"), 6}); }).find("more dims"),
            std::string::npos);
  EXPECT_NE(error_of([&] { build("", DimVector{5}); }).find("does not broadcast"), std::string::npos);
}

// MatMul -> Add(bias) -> Gelu -> Add(residual), the graph the fused op replaces.
std::shared_ptr<Graph> unfused(DType t, const std::string& approximate, bool residual) {
  testing::PassGraph b(20);
  b.input("x", t, {2, 3, 8});
  b.input("w", t, {8, 5});
  b.input("b", t, {5});
  b.node("MatMul", {"x", "w"}, {"mm"});
  b.node("Add", {"mm", "b"}, {"h"});
  std::string last = "h";
  if (!approximate.empty()) {
    b.node("Gelu", {"h"}, {"g"}, {Attribute::make_string("approximate", approximate)});
    last = "g";
  }
  if (residual) {
    b.input("r", t, {2, 3, 5});
    b.node("Add", {last, "r"}, {"y"});
    last = "y";
  }
  b.output(last);
  return b.done();
}

TEST(CpuMatMulEpilogue, ReferenceKernelIsTheUnfusedGraphBitForBit) {
  for (DType t : {DType::Float32, DType::Float16, DType::BFloat16})
    for (const char* approx : {"", "none", "tanh"})
      for (bool residual : {false, true}) {
        const std::string act = std::string(approx) == "" ? "" : std::string(approx) == "none" ? "gelu" : "gelu_tanh";
        NamedTensors in = {{"x", testing::ramp(t, {2, 3, 8}, 1)}, {"w", testing::ramp(t, {8, 5}, 2)},
                           {"b", testing::ramp(t, {5}, 3)}};
        if (residual) in.emplace_back("r", testing::ramp(t, {2, 3, 5}, 4));
        std::vector<std::optional<Operand>> ops;
        for (const auto& [name, v] : in) ops.push_back(Operand{v});
        auto fused = testing::mm::one_node("MatMulBias", ops, act_attr(act), "octet");
        SessionOptions ref;
        ref.kernels = KernelChoice::Reference;
        NamedTensors fused_in;
        for (size_t i = 0; i < in.size(); ++i) fused_in.emplace_back("in" + std::to_string(i), in[i].second);
        const Tensor got = Session(fused, ref).run(fused_in)[0].second;
        const Tensor want = Session(unfused(t, approx, residual), ref).run(in)[0].second;
        EXPECT_EQ(testing::max_relative_error({{"y", got}}, {{"y", want}}), 0.0)
            << dtype_name(t) << " activation '" << act << "' residual " << residual;
      }
}

TEST(CpuMatMulEpilogue, ReferenceKernelRejectsAResidualThatWouldGrowTheOutput) {
  // [1, 5] + [3, 5] broadcasts to [3, 5]: an Add could, the epilogue must not.
  Operand r{rand({3, 5}, 4), false, DimVector{Dim::symbol("a"), 5}};
  auto g = testing::mm::one_node(
      "MatMulBias", {Operand{rand({1, 8}, 1)}, Operand{rand({8, 5}, 2), true}, Operand{rand({5}, 3), true}, r}, {}, "octet");
  for (KernelChoice k : {KernelChoice::Optimized, KernelChoice::Reference})
    EXPECT_NE(error_of([&] { testing::mm::session(g, k).run({{"in0", rand({1, 8}, 1)}, {"in3", r.value}}); })
                  .find("does not broadcast into the output"),
              std::string::npos);
}

TEST(CpuMatMulEpilogue, OneDnnMatchesTheReferenceForEveryEpilogue) {
  uint64_t seed = 100;
  for (const char* act : {"", "gelu", "gelu_tanh"})
    for (int64_t m : {1, 17, 129})
      for (auto [k, n] : {std::pair<int64_t, int64_t>{3, 17}, {64, 64}, {129, 33}, {4099, 5}}) {
        // The residual's shapes: none, the output's, one row repeated, a scalar.
        const std::vector<int64_t> out = {2, m, n};
        for (std::optional<std::vector<int64_t>> r : {std::optional<std::vector<int64_t>>{}, std::optional(out),
                                                      std::optional(std::vector<int64_t>{n}),
                                                      std::optional(std::vector<int64_t>{1, 1, 1})}) {
          std::vector<std::optional<Operand>> ins = {Operand{rand({2, m, k}, seed++)}, Operand{rand({k, n}, seed++), true},
                                                     Operand{rand({n}, seed++), true}};
          if (r) ins.push_back(Operand{rand(*r, seed++)});
          const std::string what = std::string("activation '") + act + "' [2," + std::to_string(m) + "," +
                                   std::to_string(k) + "]x[" + std::to_string(k) + "," + std::to_string(n) +
                                   "] residual " + (r ? shape_str(*r) : "none");
          EXPECT_EQ(check_against_reference("MatMulBias", ins, act_attr(act), k, what, "octet"), 1) << what;
          // And it ran on oneDNN, post-ops and all, not on the reference fallback.
          testing::mm::DirectKernel direct(testing::mm::one_node("MatMulBias", ins, act_attr(act), "octet"));
          std::vector<const Tensor*> tensors;
          for (const auto& op : ins) tensors.push_back(&op->value);
          direct.run(tensors);
          EXPECT_EQ(direct.matmul().reference_runs(), 0) << what;
        }
      }
}

TEST(CpuMatMulEpilogue, BatchedAndFallbackShapes) {
  // A runtime 4-D B runs batched with the bias and a residual of the output's shape; a
  // residual repeated over the batch only (not expressible on the flattened [M, N]) goes
  // to the reference kernel and still matches.
  EXPECT_EQ(check_against_reference("MatMulBias",
                                    {Operand{rand({2, 3, 7, 16}, 1)}, Operand{rand({2, 3, 16, 9}, 2)},
                                     Operand{rand({9}, 3), true}, Operand{rand({2, 3, 7, 9}, 4)}},
                                    act_attr("gelu"), 16, "batched", "octet"),
            1);
  EXPECT_EQ(check_against_reference("MatMulBias",
                                    {Operand{rand({2, 7, 16}, 1)}, Operand{rand({16, 9}, 2), true},
                                     Operand{rand({9}, 3), true}, Operand{rand({7, 9}, 4)}},
                                    act_attr("gelu_tanh"), 16, "residual over batch", "octet"),
            1);
  EXPECT_EQ(check_against_reference("MatMulBias",
                                    {Operand{rand({2, 7, 16}, 1)}, Operand{rand({16, 9}, 2), true},
                                     Operand{rand({9}, 3), true}, Operand{rand({2, 7, 1}, 4)}},
                                    {}, 16, "residual per row", "octet"),
            1);
}

}  // namespace
}  // namespace octet
