// SessionOptions::release_packed_weights: a session that solely owns its graph drops the
// plain data of weights its oneDNN kernels keep packed, and runs exactly as before,
// fallback paths included. oneDNN fixes its ISA per process, so the whole suite runs
// again in a child process per ISA level (OCTET_ISA): under AVX-512 the matmul and conv
// weights are packed (blocked layouts) and released; under AVX2 a MatMul's B keeps the
// plain layout and the graph keeps it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "analysis/model_summary.h"
#include "isa_child_runs.h"
#include "kernels/cpu/dnnl_common.h"
#include "onnx/model_io.h"
#include "ops/infer.h"
#include "runtime/session.h"

namespace octet {
namespace {

// Deterministic values in [-1, 1], different per seed.
Tensor rand(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t(DType::Float32, std::move(shape));
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<float>(static_cast<double>(s >> 40) / static_cast<double>(1ull << 23) - 1.0);
  }
  return t;
}

Value* add_weight(Graph& g, const std::string& name, std::vector<int64_t> shape, uint64_t seed) {
  return g.add_initializer(name, std::make_shared<const Tensor>(rand(std::move(shape), seed)));
}

// One big-weight node reading input "x" (leading dims symbolic) and weight "w".
//   MatMul       x [m, 512]      w [512, 512]
//   Gemm         x [m, 512]      w [384, 512] (transB), C [384]
//   MatMulBias   x [b, s, 512]   w [512, 512], bias [512], gelu, residual r [b, 1, 512]
//                (a residual broadcast over rows: the kernel sends it to the reference)
//   Conv         x [n, 64, 14, 14]  w [128, 64, 3, 3], bias [128], pads 1
std::shared_ptr<Graph> build(const std::string& kind) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 17;
  const Dim m = Dim::symbol("m");
  if (kind == "MatMul") {
    g->add_input("x", TensorType(DType::Float32, DimVector{m, 512}));
    add_weight(*g, "w", {512, 512}, 1);
    g->add_node("MatMul", {"x", "w"}, {"y"}, {}, "", "node_under_test");
  } else if (kind == "Gemm") {
    g->add_input("x", TensorType(DType::Float32, DimVector{m, 512}));
    add_weight(*g, "w", {384, 512}, 2);
    add_weight(*g, "c", {384}, 3);
    g->add_node("Gemm", {"x", "w", "c"}, {"y"}, {Attribute::make_int("transB", 1)}, "", "node_under_test");
  } else if (kind == "MatMulBias") {
    g->opset_imports["octet"] = 1;
    g->add_input("x", TensorType(DType::Float32, DimVector{Dim::symbol("b"), Dim::symbol("s"), 512}));
    g->add_input("r", TensorType(DType::Float32, DimVector{Dim::symbol("b"), 1, 512}));
    add_weight(*g, "w", {512, 512}, 4);
    add_weight(*g, "bias", {512}, 5);
    g->add_node("MatMulBias", {"x", "w", "bias", "r"}, {"y"}, {Attribute::make_string("activation", "gelu")},
                "octet", "node_under_test");
  } else if (kind == "Conv") {
    g->add_input("x", TensorType(DType::Float32, DimVector{Dim::symbol("n"), 64, 14, 14}));
    add_weight(*g, "w", {128, 64, 3, 3}, 6);
    add_weight(*g, "bias", {128}, 7);
    g->add_node("Conv", {"x", "w", "bias"}, {"y"}, {Attribute::make_ints("pads", {1, 1, 1, 1})}, "",
                "node_under_test");
  } else {
    ADD_FAILURE() << "unknown kind " << kind;
  }
  g->mark_output(g->value("y"));
  infer_graph(*g);
  return g;
}

// Whether the optimized kernel of g's node keeps its weight (input 1) packed.
bool kernel_owns_weight(const Graph& g) {
  const Node& n = *g.nodes().front();
  const KernelDef* def = KernelRegistry::optimized().find_def(n.domain(), n.op_type());
  std::unique_ptr<KernelState> state;
  return def && def->prepare && def->prepare(n, state) && state && state->owns_input(1);
}

SessionOptions options(bool release, KernelChoice kernels = KernelChoice::Optimized) {
  SessionOptions o;
  o.threads = 1;
  o.kernels = kernels;
  o.release_packed_weights = release;
  return o;
}

NamedTensors feeds(const std::string& kind, int64_t rows, uint64_t seed) {
  if (kind == "Conv") return {{"x", rand({rows, 64, 14, 14}, seed)}};
  if (kind == "MatMulBias") return {{"x", rand({2, rows, 512}, seed)}, {"r", rand({2, 1, 512}, seed + 1)}};
  return {{"x", rand({rows, 512}, seed)}};
}

void expect_bitwise(const NamedTensors& got, const NamedTensors& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const Tensor &g = got[i].second, &w = want[i].second;
    ASSERT_EQ(g.shape(), w.shape()) << what << " output " << got[i].first;
    ASSERT_EQ(g.dtype(), w.dtype()) << what;
    EXPECT_EQ(0, g.bytes() ? std::memcmp(g.raw(), w.raw(), g.bytes()) : 0) << what << " output " << got[i].first;
  }
}

const char* kKinds[] = {"MatMul", "Gemm", "MatMulBias", "Conv"};

TEST(SessionReleaseWeights, SoleOwnerReleasesPackedWeightsAndRunsIdentically) {
  for (const std::string kind : kKinds) {
    SCOPED_TRACE(kind);
    const bool owns = kernel_owns_weight(*build(kind));
    // oneDNN wants blocked float32 weights under AVX-512: the case this feature is for.
    if (dnnl_cpu::engine_isa() == IsaLevel::Avx512) {
      EXPECT_TRUE(owns);
    }
    Session released(build(kind), options(true));
    Session kept(build(kind), options(false));
    const int64_t bytes = shape_numel(released.graph().value("w")->type.static_shape()) * 4;
    EXPECT_EQ(released.released_weights(), owns ? 1 : 0);
    EXPECT_EQ(released.released_weight_bytes(), owns ? static_cast<size_t>(bytes) : 0u);
    EXPECT_EQ(released.graph().value("w")->data_released(), owns);
    EXPECT_EQ(released.graph().value("w")->constant() == nullptr, owns);
    EXPECT_TRUE(released.graph().value("w")->is_initializer());
    EXPECT_EQ(kept.released_weights(), 0);
    EXPECT_NE(kept.graph().value("w")->constant(), nullptr);
    // Small weights (bias, C) are never kept packed: the graph keeps them.
    for (const char* small : {"bias", "c"})
      if (const Value* v = released.graph().find_value(small)) {
        EXPECT_NE(v->constant(), nullptr) << small;
      }
    for (int64_t rows : {1, 7, 128})
      expect_bitwise(released.run(feeds(kind, rows, rows)), kept.run(feeds(kind, rows, rows)),
                     kind + " rows " + std::to_string(rows));
  }
}

TEST(SessionReleaseWeights, SecondOwnerOrConstGraphKeepsWeights) {
  for (const std::string kind : kKinds) {
    SCOPED_TRACE(kind);
    std::shared_ptr<Graph> g = build(kind);
    Session shared(g, options(true));
    EXPECT_EQ(shared.released_weights(), 0);
    EXPECT_NE(g->value("w")->constant(), nullptr);
    EXPECT_FALSE(g->value("w")->data_released());
    // A const graph is the caller's: never changed, even when the session holds the only reference.
    Session from_const(std::shared_ptr<const Graph>(build(kind)), options(true));
    EXPECT_EQ(from_const.released_weights(), 0);
    EXPECT_NE(from_const.graph().value("w")->constant(), nullptr);
    expect_bitwise(shared.run(feeds(kind, 3, 9)), from_const.run(feeds(kind, 3, 9)), kind);
  }
}

// Shapes oneDNN does not take go to the reference kernel, which then reads the weight
// unpacked from the kernel's packed copy: the same bits the reference session reads.
TEST(SessionReleaseWeights, FallbackToReferenceAfterRelease) {
  for (const std::string kind : kKinds) {
    SCOPED_TRACE(kind);
    Session released(build(kind), options(true));
    Session reference(build(kind), options(false, KernelChoice::Reference));
    // Empty inputs (0 rows, batch 0) always fall back; so does MatMulBias's residual
    // broadcast over rows, at every size.
    expect_bitwise(released.run(feeds(kind, 0, 11)), reference.run(feeds(kind, 0, 11)), kind + " empty");
    if (kind == "MatMulBias")
      expect_bitwise(released.run(feeds(kind, 5, 12)), reference.run(feeds(kind, 5, 12)), kind + " residual");
  }
}

TEST(SessionReleaseWeights, WeightAlsoReadByAnotherKernelIsKept) {
  // w read by a MatMul (packs it) and by Relu (reads the graph's data): kept.
  auto g = build("MatMul");
  g->add_node("Relu", {"w"}, {"w_relu"});
  g->mark_output(g->value("w_relu"));
  infer_graph(*g);
  Session s(std::move(g), options(true));
  EXPECT_EQ(s.released_weights(), 0);
  ASSERT_NE(s.graph().value("w")->constant(), nullptr);
  const NamedTensors out = s.run(feeds("MatMul", 4, 13));
  const std::vector<float> w = s.graph().value("w")->constant()->to_float_vector();
  const std::vector<float> relu = out[1].second.to_float_vector();
  ASSERT_EQ(relu.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) ASSERT_EQ(relu[i], std::max(w[i], 0.0f)) << i;

  // w read by two MatMuls that each pack it: released.
  auto two = build("MatMul");
  two->add_node("MatMul", {"y", "w"}, {"y2"});
  two->mark_output(two->value("y2"));
  infer_graph(*two);
  const bool owns = kernel_owns_weight(*two);
  Session both(std::move(two), options(true));
  EXPECT_EQ(both.released_weights(), owns ? 1 : 0);
  auto again = build("MatMul");
  again->add_node("MatMul", {"y", "w"}, {"y2"});
  again->mark_output(again->value("y2"));
  infer_graph(*again);
  Session kept(std::move(again), options(false));
  expect_bitwise(both.run(feeds("MatMul", 6, 14)), kept.run(feeds("MatMul", 6, 14)), "two readers");
}

TEST(SessionReleaseWeights, GraphOutputAndReferenceKernelsKeepWeights) {
  auto g = build("MatMul");
  g->mark_output(g->value("w"));
  Session out(std::move(g), options(true));
  EXPECT_EQ(out.released_weights(), 0);
  Session ref(build("MatMul"), options(true, KernelChoice::Reference));
  EXPECT_EQ(ref.released_weights(), 0);
  EXPECT_NE(ref.graph().value("w")->constant(), nullptr);
}

// What reads a graph's initializer data copes with released data: export fails naming
// the value, the parameter count comes from the type, folding skips it.
TEST(SessionReleaseWeights, ReleasedGraphExportFailsAndSummaryCounts) {
  Model model;
  model.graph = std::make_unique<Graph>();
  Graph& graph = *model.graph;
  graph.opset_imports[""] = 17;
  graph.add_input("x", TensorType(DType::Float32, DimVector{Dim::symbol("m"), 512}));
  add_weight(graph, "w", {512, 512}, 1);
  graph.add_node("MatMul", {"x", "w"}, {"y"});
  graph.mark_output(graph.value("y"));
  infer_graph(graph);
  EXPECT_EQ(graph.release_initializer_data(graph.value("w")), 512u * 512u * 4u);
  EXPECT_TRUE(graph.value("w")->data_released());
  EXPECT_TRUE(verify_graph(graph).empty());

  const auto path = std::filesystem::temp_directory_path() / "octet_release_weights_test.onnx";
  try {
    save_model(model, path);
    ADD_FAILURE() << "save_model wrote a graph whose weight data was released";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("initializer 'w' has no data"), std::string::npos) << e.what();
  }
  const nlohmann::json summary = summarize_model(model, {});
  EXPECT_EQ(summary["parameters"]["count"], 512 * 512) << summary["parameters"].dump();
  // A session cannot be built on data another one released.
  EXPECT_THROW({ Session s(std::shared_ptr<const Graph>(std::move(model.graph))); }, Error);
}

// Each ISA level in a process of its own: the tests above again under OCTET_ISA=level.
TEST(SessionReleaseWeightsIsa, EveryLevelInAChildProcess) {
  testing::expect_child_runs_pass_at_every_isa("SessionReleaseWeights.*", "session_release_isa");
}

// Under AVX2 oneDNN reads float32 matmul weights in the plain row-major layout: a MatMul's
// B is not packed, so the graph keeps it. (Gemm's transposed B is reordered to row-major,
// a full copy, and released; the conv's blocked AVX2 layout is too.)
TEST(SessionReleaseWeights, MatMulUnderAvx2KeepsTheGraphWeights) {
  if (dnnl_cpu::engine_isa() != IsaLevel::Avx2) GTEST_SKIP() << "runs in the OCTET_ISA=avx2 child";
  for (const std::string kind : {"MatMul", "MatMulBias"}) {
    Session s(build(kind), options(true));
    EXPECT_EQ(s.released_weights(), 0) << kind;
    EXPECT_NE(s.graph().value("w")->constant(), nullptr) << kind;
  }
}

// SessionOptions::pack_weights = false (the quantizer's float passes): MatMul and Gemm read
// the graph's plain weight, so nothing is packed or released, and they compute what the
// reference kernels compute. The setting holds for that session's creation only.
TEST(SessionReleaseWeights, PackWeightsOffReadsTheGraphsWeights) {
  for (const std::string kind : {"MatMul", "Gemm"}) {
    SCOPED_TRACE(kind);
    SessionOptions o = options(true);
    o.pack_weights = false;
    Session plain(build(kind), o);
    Session reference(build(kind), options(false, KernelChoice::Reference));
    EXPECT_EQ(plain.released_weights(), 0);
    EXPECT_NE(plain.graph().value("w")->constant(), nullptr);
    EXPECT_EQ(plain.optimized_nodes(), 1);  // still oneDNN, on the plain layout
    for (int64_t rows : {1, 7, 128}) {
      const NamedTensors got = plain.run(feeds(kind, rows, rows)), want = reference.run(feeds(kind, rows, rows));
      const std::vector<float> g = got[0].second.to_float_vector(), w = want[0].second.to_float_vector();
      ASSERT_EQ(g.size(), w.size());
      for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], 1e-4f * (1 + std::fabs(w[i]))) << rows << " " << i;
    }
    EXPECT_TRUE(weight_packing_enabled());  // restored after the session was built
    if (dnnl_cpu::engine_isa() == IsaLevel::Avx512) {
      EXPECT_TRUE(kernel_owns_weight(*build(kind)));
    }
  }
}

}  // namespace
}  // namespace octet
