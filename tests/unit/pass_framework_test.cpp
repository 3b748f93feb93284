// The pass framework: fixed point, iteration bound, disabled passes, statistics and the
// report, and what happens to a patch the graph rejects.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "pass_test_util.h"

namespace octet {
namespace {

using testing::PassGraph;

// x -> Identity -> Identity -> Relu -> y, plus a dead Neg.
std::shared_ptr<Graph> small_graph() {
  PassGraph b;
  b.input("x", DType::Float32, {2, 3});
  b.node("Identity", {"x"}, {"a"});
  b.node("Identity", {"a"}, {"c"});
  b.node("Relu", {"c"}, {"y"});
  b.node("Neg", {"x"}, {"dead"});
  b.output("y");
  return b.done();
}

TEST(Pipeline, RunsToAFixedPointAndCountsPerPass) {
  auto g = small_graph();
  OptimizeOptions opts;
  opts.verify = true;
  OptimizeReport r = optimize(*g, opts);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.nodes_before, 4);
  EXPECT_EQ(r.nodes_after, 1);
  EXPECT_EQ(g->nodes()[0]->op_type(), "Relu");
  EXPECT_EQ(g->nodes()[0]->input(0), g->value("x"));
  const PassStats* noops = r.find("eliminate_noops");
  ASSERT_NE(noops, nullptr);
  EXPECT_EQ(noops->details.at("Identity"), 2);
  EXPECT_EQ(noops->nodes_removed, 2);
  EXPECT_EQ(r.find("eliminate_dead_code")->nodes_removed, 1);
  EXPECT_EQ(r.detail("Identity"), 2);
  // The second round changes nothing, and stops the main list; the finishing passes
  // then take one round of their own.
  EXPECT_EQ(r.iterations, 3);
  EXPECT_EQ(noops->runs, 2);
  EXPECT_EQ(noops->changed_runs, 1);
}

TEST(Pipeline, StopsAtTheIterationLimitWhenAPassNeverSettles) {
  auto g = small_graph();
  int calls = 0;
  Pipeline p({Pass{"restless", [&](Graph&, PassContext&) { return ++calls > 0; }}});
  OptimizeOptions opts;
  opts.max_iterations = 3;
  OptimizeReport r = p.run(*g, opts);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(r.iterations, 3);
  EXPECT_FALSE(r.converged);
  EXPECT_NE(r.to_text().find("stopped at the limit"), std::string::npos);
}

TEST(Pipeline, FinishingPassesRunOnceTheMainListHasConverged) {
  auto g = small_graph();
  int main_calls = 0, main_calls_seen_by_finishing = -1, finishing_calls = 0;
  // The main pass changes the graph in its first two rounds; the finishing pass must not
  // run before the main list has settled (round 3 changes nothing).
  Pipeline p({Pass{"settling", [&](Graph&, PassContext&) { return ++main_calls <= 2; }}},
             {Pass{"finishing", [&](Graph&, PassContext&) {
               if (main_calls_seen_by_finishing < 0) main_calls_seen_by_finishing = main_calls;
               return ++finishing_calls == 1;
             }}});
  OptimizeReport r = p.run(*g, OptimizeOptions{});
  EXPECT_EQ(main_calls_seen_by_finishing, 3);
  EXPECT_EQ(finishing_calls, 2);  // to its own fixed point
  EXPECT_EQ(r.iterations, 5);
  EXPECT_TRUE(r.converged);
  ASSERT_EQ(r.passes.size(), 2u);
  EXPECT_EQ(r.find("finishing")->changed_runs, 1);
  // Level 2 merges sibling products and turns Transposes into Reshapes only in its
  // finishing stage.
  OptimizeOptions level2;
  const Pipeline standard = Pipeline::standard(level2);
  for (const Pass& pass : standard.passes()) {
    EXPECT_NE(pass.name, "transpose_to_reshape");
    EXPECT_NE(pass.name, "merge_sibling_matmuls");
    EXPECT_NE(pass.name, "fuse_swiglu");  // it takes merge_sibling_matmuls' gate/up Split whole
  }
  ASSERT_GE(standard.finishing().size(), 4u);
  EXPECT_EQ(standard.finishing()[0].name, "merge_sibling_matmuls");
  EXPECT_EQ(standard.finishing()[1].name, "fuse_swiglu");
  EXPECT_EQ(standard.finishing()[2].name, "fuse_nbits_split");
  EXPECT_EQ(standard.finishing()[3].name, "transpose_to_reshape");
}

TEST(Pipeline, LevelsAndDisabledPasses) {
  OptimizeOptions none;
  none.level = 0;
  auto g = small_graph();
  EXPECT_EQ(optimize(*g, none).nodes_after, 4);
  EXPECT_TRUE(Pipeline::standard(none).passes().empty());

  OptimizeOptions cleanup;
  cleanup.level = 1;
  const Pipeline level1 = Pipeline::standard(cleanup);
  for (const Pass& p : level1.passes()) EXPECT_EQ(p.name.rfind("fuse_", 0), std::string::npos);

  OptimizeOptions no_noops;
  no_noops.disabled_passes = {"eliminate_noops"};
  auto h = small_graph();
  OptimizeReport r = optimize(*h, no_noops);
  EXPECT_EQ(r.nodes_after, 3);  // only the dead Neg went
  EXPECT_EQ(r.find("eliminate_noops")->runs, 0);
}

TEST(Pipeline, ReportAsJsonAndText) {
  auto g = small_graph();
  OptimizeReport r = optimize(*g);
  nlohmann::json j = r.to_json();
  EXPECT_EQ(j["nodes_before"], 4);
  EXPECT_EQ(j["nodes_after"], 1);
  bool found = false;
  for (const auto& p : j["passes"])
    if (p["name"] == "eliminate_noops") {
      found = true;
      EXPECT_EQ(p["details"]["Identity"], 2);
      EXPECT_EQ(p["nodes_removed"], 2);
    }
  EXPECT_TRUE(found);
  const std::string text = r.to_text();
  EXPECT_NE(text.find("nodes 4 -> 1"), std::string::npos) << text;
  EXPECT_NE(text.find("eliminate_noops: 2 rewrite(s)"), std::string::npos) << text;
  EXPECT_EQ(text.find("fuse_gelu_erf"), std::string::npos) << "passes that did nothing are not listed\n" << text;
}

// A pass whose patch removes a value still in use: the graph rejects it.
Pass bad_pass() {
  return {"bad", [](Graph& g, PassContext& ctx) {
            GraphPatch p(g);
            p.remove_node(g.value("a")->producer());
            return ctx.apply(p);
          }};
}

TEST(PassContext, RejectedPatchThrowsWhenVerifyingAndWarnsOtherwise) {
  auto g = small_graph();
  OptimizeOptions strict;
  strict.verify = true;
  try {
    Pipeline({bad_pass()}).run(*g, strict);
    ADD_FAILURE() << "a rejected patch must throw under verify";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pass bad built an invalid patch"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g->node_count(), 4u);

  OptimizeReport r = Pipeline({bad_pass()}).run(*g, OptimizeOptions{});
  EXPECT_EQ(g->node_count(), 4u);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("bad: skipped a rewrite"), std::string::npos) << r.warnings[0];
  EXPECT_TRUE(r.converged);
}

}  // namespace
}  // namespace octet
