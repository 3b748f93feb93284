// The memory planner (place_lifetimes) and the session's arena: tensors alive at the same
// time never share bytes, the arena is smaller than the tensors it holds, and nothing a
// run returns or still reads points at memory a later step reused.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "pass_test_util.h"
#include "onnx/model_io.h"
#include "runtime/memory_plan.h"

namespace octet {
namespace {

using testing::PassGraph;
using testing::ramp;

void expect_valid_layout(const std::vector<Lifetime>& lives, const ArenaLayout& layout) {
  ASSERT_EQ(layout.offsets.size(), lives.size());
  for (size_t i = 0; i < lives.size(); ++i) {
    EXPECT_EQ(layout.offsets[i] % kArenaAlignment, 0u);
    EXPECT_LE(layout.offsets[i] + lives[i].bytes, layout.total_bytes);
    for (size_t j = i + 1; j < lives.size(); ++j) {
      bool same_time = lives[i].first <= lives[j].last && lives[j].first <= lives[i].last;
      bool same_bytes = layout.offsets[i] < layout.offsets[j] + lives[j].bytes &&
                        layout.offsets[j] < layout.offsets[i] + lives[i].bytes;
      EXPECT_FALSE(same_time && same_bytes) << "tensors " << i << " and " << j << " overlap";
    }
  }
}

TEST(MemoryPlan, SequentialChainReusesTwoBuffers) {
  // a -> b -> c -> d: each tensor dies when the next is written, so two slots suffice.
  std::vector<Lifetime> lives = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  ArenaLayout layout = place_lifetimes(lives);
  expect_valid_layout(lives, layout);
  EXPECT_EQ(layout.total_bytes, 2 * 1024u);  // 1000 rounded up to the 64-byte alignment
}

TEST(MemoryPlan, OverlappingLifetimesNeverShare) {
  std::vector<Lifetime> lives = {{64, 0, 5}, {64, 1, 2}, {64, 2, 3}, {128, 0, 0}, {1, 5, 5}, {0, 3, 3}};
  ArenaLayout layout = place_lifetimes(lives);
  expect_valid_layout(lives, layout);
}

TEST(MemoryPlan, RandomLifetimesAreValidAndSmallerThanTheSum) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Lifetime> lives;
    size_t sum = 0;
    int n = 1 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      int first = static_cast<int>(rng() % 40);
      Lifetime l{rng() % 5000, first, first + static_cast<int>(rng() % 6)};
      sum += (l.bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment + (l.bytes == 0 ? 64 : 0);
      lives.push_back(l);
    }
    ArenaLayout layout = place_lifetimes(lives);
    expect_valid_layout(lives, layout);
    EXPECT_LE(layout.total_bytes, sum);
  }
}

// x -> Relu -> a -> Reshape(view) -> v -> [Relu, Relu, Relu chain that reuses memory] -> Add(v, ...)
// The view keeps a's memory alive until Add reads v, though a itself is last read by Reshape.
std::shared_ptr<Graph> view_graph(bool view_is_output) {
  PassGraph b;
  b.input("x", DType::Float32, {Dim(4), Dim(8)});
  b.init("shape", Tensor::from_vector<int64_t>({2}, {8, 4}));
  b.node("Relu", {"x"}, {"a"});
  b.node("Reshape", {"a", "shape"}, {"v"});
  b.node("Neg", {"v"}, {"n1"});
  b.node("Neg", {"n1"}, {"n2"});
  b.node("Abs", {"n2"}, {"n3"});
  b.node("Add", {"v", "n3"}, {"y"});
  b.output("y");
  if (view_is_output) b.output("v");
  return b.done();
}

TEST(SessionArena, ViewsKeepTheirMemoryAliveAndOutputsNeverPointIntoTheArena) {
  for (bool view_is_output : {false, true}) {
    auto g = view_graph(view_is_output);
    Session s(g);
    Tensor x = ramp(DType::Float32, {4, 8});
    NamedTensors first = s.run({{"x", x}});
    NamedTensors second = s.run({{"x", ramp(DType::Float32, {4, 8}, 5)}});
    // y = v + |v| = 2 * relu(x) for every element.
    const float* y = first[0].second.data<float>();
    for (int64_t i = 0; i < 32; ++i) EXPECT_FLOAT_EQ(y[i], 2 * std::max(0.0f, x.data<float>()[i])) << i;
    if (view_is_output) {  // the first run's outputs survive the second run
      const float* v = first[1].second.data<float>();
      for (int64_t i = 0; i < 32; ++i) EXPECT_FLOAT_EQ(v[i], std::max(0.0f, x.data<float>()[i])) << i;
    }
    Session::MemoryStats stats = s.memory_stats({});
    EXPECT_GT(stats.arena_tensors, 0u);
    EXPECT_LT(stats.arena_bytes, stats.tensor_bytes);
  }
}

TEST(SessionArena, NoOpCastReturningItsInputIsCopiedOutOfReusedMemory) {
  // Cast to the same type returns its input's memory without being declared a view.
  PassGraph b;
  b.input("x", DType::Float32, {Dim(16)});
  b.node("Relu", {"x"}, {"a"});
  b.node("Cast", {"a"}, {"c"}, {Attribute::make_int("to", 1)});
  b.node("Neg", {"c"}, {"n1"});
  b.node("Neg", {"n1"}, {"n2"});
  b.node("Sub", {"c", "n2"}, {"y"});  // c - c = 0 only if c survived
  b.output("y");
  Session s(b.done());
  NamedTensors out = s.run({{"x", ramp(DType::Float32, {16})}});
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(out[0].second.data<float>()[i], 0.0f) << i;
}

TEST(SessionArena, FixturesMatchAcrossRepeatedRunsAndShapes) {
  for (const char* name : {"bert_tiny.onnx", "gpt2_tiny.onnx"}) {
    Model m = load_model(std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/" + name);
    auto g = std::shared_ptr<const Graph>(std::move(m.graph));
    Session s(g);
    auto inputs = [&](int64_t batch, int64_t seq) {
      NamedTensors in;
      for (const Value* v : s.required_inputs()) {
        std::vector<int64_t> ids(static_cast<size_t>(batch * seq));
        for (size_t i = 0; i < ids.size(); ++i) ids[i] = v->name() == "attention_mask" ? 1 : static_cast<int64_t>((i * 37 + 3) % 2);
        in.emplace_back(v->name(), Tensor::from_vector<int64_t>({batch, seq}, ids));
      }
      return in;
    };
    NamedTensors a = s.run(inputs(2, 9));
    s.run(inputs(1, 33));  // another plan, another arena size
    NamedTensors b = s.run(inputs(2, 9));
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_EQ(std::memcmp(a[i].second.raw(), b[i].second.raw(), a[i].second.bytes()), 0) << name;
    Session::MemoryStats stats = s.memory_stats({{"batch", 2}, {"seq", 9}});
    EXPECT_LT(stats.arena_bytes * 2, stats.tensor_bytes) << name;
  }
}

}  // namespace
}  // namespace octet
