// Session run plans across bindings (runtime/session_plan.cpp): a layout reused while the
// tensors fit and laid out again when one outgrows it gives the results a fresh session
// gives, shape values the bindings decide are folded (and equal what their kernels would
// compute), and memory_stats does not depend on what ran before.
#include <gtest/gtest.h>

#include <cstring>

#include "pass_test_util.h"

namespace octet {
namespace {

using testing::PassGraph;
using testing::ramp;

// x [1, n] -> a chain whose tensors grow with n, a shape computation on n (Shape, Gather,
// Unsqueeze, Concat, Reshape) and a graph output that is a shape value.
std::shared_ptr<Graph> growing_graph() {
  PassGraph b(13);
  b.input("x", DType::Float32, {1, Dim::symbol("n")});
  b.init("one", Tensor::from_vector<int64_t>({1}, {1}));
  b.init("minus_one", Tensor::from_vector<int64_t>({1}, {-1}));
  b.init("zero", Tensor::from_vector<int64_t>({}, {0}));
  b.init("axes0", Tensor::from_vector<int64_t>({1}, {0}));
  b.node("Relu", {"x"}, {"a"});
  b.node("Neg", {"x"}, {"b"});
  b.node("Concat", {"a", "b"}, {"c"}, {Attribute::make_int("axis", 1)});  // [1, 2n]
  b.node("Shape", {"c"}, {"shape"});
  b.node("Gather", {"shape", "one"}, {"len"});                            // [2n]
  b.node("Concat", {"minus_one", "len"}, {"target"}, {Attribute::make_int("axis", 0)});
  b.node("Reshape", {"c", "target"}, {"r"});                              // [1, 2n]
  b.node("Abs", {"r"}, {"d"});
  b.node("Add", {"d", "c"}, {"y"});
  b.output("y");
  b.output("target");
  return b.done();
}

NamedTensors input_of(int64_t n) { return {{"x", ramp(DType::Float32, {1, n}, static_cast<int>(n))}}; }

void expect_same(const NamedTensors& got, const NamedTensors& want, int64_t n) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].second.shape(), want[i].second.shape()) << n;
    EXPECT_EQ(std::memcmp(got[i].second.raw(), want[i].second.raw(), got[i].second.bytes()), 0) << got[i].first << " " << n;
  }
}

TEST(SessionPlan, GrowingAndShrinkingBindingsMatchAFreshSession) {
  auto g = growing_graph();
  Session reused{std::shared_ptr<const Graph>(g)};
  // Grows one at a time (the decode pattern), then jumps down and up again.
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 70; ++n) lengths.push_back(n);
  for (int64_t n : {3, 500, 2, 71, 1000}) lengths.push_back(n);
  for (int64_t n : lengths) {
    Session fresh{std::shared_ptr<const Graph>(g)};
    expect_same(reused.run(input_of(n)), fresh.run(input_of(n)), n);
  }
}

TEST(SessionPlan, FoldedShapeValuesEqualWhatTheirKernelsCompute) {
  auto g = growing_graph();
  for (int64_t n : {1, 5, 9}) {
    SessionOptions reference;
    reference.kernels = KernelChoice::Reference;  // runs every node, folds nothing
    NamedTensors want = Session(std::shared_ptr<const Graph>(g), reference).run(input_of(n));
    // Every computed value reaches the observer, folded or not.
    std::vector<std::string> seen;
    NamedTensors got = Session(std::shared_ptr<const Graph>(g))
                           .run(input_of(n), [&](const Value& v, const Tensor& t) {
                             seen.push_back(v.name());
                             if (v.name() == "len") {
                               EXPECT_EQ(t.to_int64_vector(), std::vector<int64_t>{2 * n});
                             }
                           });
    expect_same(got, want, n);
    EXPECT_EQ(got[1].second.to_int64_vector(), (std::vector<int64_t>{-1, 2 * n}));
    for (const char* name : {"shape", "len", "target", "y"})
      EXPECT_NE(std::find(seen.begin(), seen.end(), name), seen.end()) << name;
  }
}

TEST(SessionPlan, AFoldedOutputIsTheCallersOwnCopy) {
  Session s(growing_graph());
  NamedTensors first = s.run(input_of(4));
  first[1].second.mutable_data<int64_t>()[1] = 12345;  // the caller writes its output
  NamedTensors second = s.run(input_of(4));           // the same plan, cached
  EXPECT_EQ(second[1].second.to_int64_vector(), (std::vector<int64_t>{-1, 8}));
}

TEST(SessionPlan, MemoryStatsDoNotDependOnEarlierRuns) {
  Session s(growing_graph());
  const Session::MemoryStats before = s.memory_stats({{"n", 16}});
  for (int64_t n : {64, 17, 300, 15}) s.run(input_of(n));
  const Session::MemoryStats after = s.memory_stats({{"n", 16}});
  EXPECT_EQ(before.arena_bytes, after.arena_bytes);
  EXPECT_EQ(before.tensor_bytes, after.tensor_bytes);
  EXPECT_EQ(before.arena_tensors, after.arena_tensors);
  EXPECT_GT(before.arena_tensors, 0u);
}

// A contiguous Slice of memory that outlives the run (a weight: the rotary tables Llama
// exports slice to the current length every step) is a view, not a copy; a Slice of a
// tensor in the run's arena, whose memory later steps reuse, keeps its own copy.
TEST(SessionPlan, ContiguousSliceOfAWeightIsAViewAndOfTheArenaACopy) {
  PassGraph b(13);
  b.input("x", DType::Float32, {8, 4});
  b.init("table", ramp(DType::Float32, {16, 4}, 7));
  b.init("zero", Tensor::from_vector<int64_t>({1}, {0}));
  b.init("five", Tensor::from_vector<int64_t>({1}, {5}));
  b.init("axes0", Tensor::from_vector<int64_t>({1}, {0}));
  b.node("Slice", {"table", "zero", "five", "axes0"}, {"rows"});  // table[0:5], a view
  b.node("Relu", {"x"}, {"a"});
  b.node("Slice", {"a", "zero", "five", "axes0"}, {"s"});         // a[0:5], a is in the arena
  b.node("Neg", {"a"}, {"n1"});                                    // a's memory may go now
  b.node("Abs", {"n1"}, {"n2"});
  b.node("Neg", {"n2"}, {"n3"});
  b.node("Add", {"s", "rows"}, {"y"});
  b.node("ReduceSum", {"n3"}, {"z"});
  b.output("y");
  b.output("z");
  auto g = b.done();
  const Tensor& table = *g->value("table")->constant();
  const NamedTensors in = {{"x", ramp(DType::Float32, {8, 4}, 3)}};
  SessionOptions reference;
  reference.kernels = KernelChoice::Reference;
  const NamedTensors want = Session(std::shared_ptr<const Graph>(g), reference).run(in);
  bool viewed = false;
  Session s{std::shared_ptr<const Graph>(g)};
  for (int run = 0; run < 2; ++run)
    expect_same(s.run(in, [&](const Value& v, const Tensor& t) {
                  if (v.name() == "rows") viewed = t.raw() == table.raw();
                }),
                want, run);
  EXPECT_TRUE(viewed) << "the slice of the weight was copied";
}

}  // namespace
}  // namespace octet
