// The one place sizes are overflow-checked (src/core/sizes.h), and the paths that used to
// crash without it (issue 19): Tile / ConstantOfShape / Expand outputs whose byte size
// wraps size_t, on the reference and the optimized kernels, and a Conv over a dim of 2^62
// reaching oneDNN at session creation.
#include <gtest/gtest.h>

#include <limits>

#include "core/sizes.h"
#include "ir/dim.h"
#include "ops/infer.h"
#include "ref_shape_testing.h"

namespace octet {
namespace {

using reftest::f32;
using reftest::i64;
using reftest::ints;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

TEST(CoreSizes, NumelRejectsNegativeAndOverflow) {
  EXPECT_EQ(try_numel({}), 1);
  EXPECT_EQ(try_numel({3, 0, int64_t{1} << 62}), 0);
  EXPECT_EQ(try_numel({int64_t{1} << 31, int64_t{1} << 31}), int64_t{1} << 62);
  EXPECT_FALSE(try_numel({int64_t{1} << 32, int64_t{1} << 32}));
  EXPECT_FALSE(try_numel({kInt64Max, 2}));
  EXPECT_FALSE(try_numel({2, -1}));
  EXPECT_THROW(shape_numel({int64_t{1} << 32, int64_t{1} << 32}), OutOfMemory);
  EXPECT_THROW(shape_numel({-1}), Error);
}

TEST(CoreSizes, StorageBytesStopAtTheAddressSpace) {
  EXPECT_EQ(try_storage_bytes(DType::Float32, 3), 12u);
  EXPECT_EQ(try_storage_bytes(DType::Int4, 3), 2u);  // packed, rounded up
  EXPECT_EQ(try_storage_bytes(DType::Float32, int64_t{1} << 45), kMaxTensorBytes);
  EXPECT_FALSE(try_storage_bytes(DType::Float32, (int64_t{1} << 45) + 1));
  // 2^61 float32 elements: 2^63 bytes, and 2^66 bits: once wrapped to a small buffer.
  EXPECT_FALSE(try_storage_bytes(DType::Float32, int64_t{1} << 61));
  EXPECT_FALSE(try_storage_bytes(DType::Int64, int64_t{1} << 58));  // 2^64 bits: wrapped to 0
  EXPECT_FALSE(try_storage_bytes(DType::Float32, -1));
  EXPECT_FALSE(try_storage_bytes(DType::String, int64_t{1} << 61));  // std::string elements count too
  EXPECT_EQ(try_storage_bytes(DType::String, 10), 0u);
  EXPECT_THROW(dtype_storage_bytes(DType::Float32, int64_t{1} << 61), OutOfMemory);
}

TEST(CoreSizes, CheckedTensorBytesNamesWhatAndLimit) {
  EXPECT_EQ(checked_tensor_bytes(DType::Float16, {2, 3}, "x"), 12u);
  try {
    checked_tensor_bytes(DType::Float32, {int64_t{1} << 29, int64_t{1} << 29, 8}, "node 'n' (Tile) output 0");
    FAIL() << "no error";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("node 'n' (Tile) output 0: out of memory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2^47"), std::string::npos) << e.what();
  }
}

TEST(CoreSizes, OutOfMemoryGainsContextOnce) {
  OutOfMemory inner = OutOfMemory::allocating(64);
  OutOfMemory once = inner.within("node 'a' (Tile)");
  EXPECT_STREQ(once.within("node 'a' (Tile)").what(), once.what());
  EXPECT_STREQ(once.within("m.onnx").what(), "m.onnx: node 'a' (Tile): out of memory allocating 64 bytes");
}

TEST(CoreSizes, AllocationFailuresOfTheStandardLibraryBecomeOutOfMemory) {
  auto where = [] { return std::string("node 'a' (Expand)"); };
  EXPECT_THROW(naming_allocation_failures(where, [] { throw std::bad_alloc(); }), OutOfMemory);
  try {
    naming_allocation_failures(where, [] { std::vector<int64_t> v; v.resize(v.max_size() + 1); });
    FAIL() << "no error";
  } catch (const OutOfMemory& e) {
    EXPECT_EQ(std::string(e.what()).find("max_size"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("node 'a' (Expand): out of memory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(naming_allocation_failures(where, [] { fail("plain"); }), Error);
}

TEST(CoreSizes, DimArithmeticIsChecked) {
  const Dim big(int64_t{1} << 62);
  EXPECT_THROW(big * Dim(4), Error);
  EXPECT_THROW(big + big, Error);
  EXPECT_THROW(Dim::floor_div(Dim(std::numeric_limits<int64_t>::min()), Dim(-1)), Error);  // used to trap
  EXPECT_THROW((Dim::symbol("s") * Dim(int64_t{1} << 40)).evaluate({{"s", int64_t{1} << 40}}), Error);
  EXPECT_EQ((Dim::symbol("s") * Dim(3)).evaluate({{"s", 5}}), 15);
}

// Runs one node whose shape-giving input arrives at run time (so nothing is known before
// the kernel runs), on the reference or the optimized kernels.
void run_node(const std::string& op, const std::vector<Tensor>& inputs, const std::vector<Attribute>& attrs,
              KernelChoice kernels) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 18;
  std::vector<std::string> names;
  NamedTensors feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    names.push_back("in" + std::to_string(i));
    const auto& s = inputs[i].shape();
    g->add_input(names.back(), TensorType(inputs[i].dtype(), DimVector(s.begin(), s.end())));
    feeds.emplace_back(names.back(), inputs[i]);
  }
  g->add_node(op, names, {"out"}, attrs, "", reftest::kNodeName);
  g->mark_output(g->value("out"));
  SessionOptions options;
  options.kernels = kernels;
  Session session(g, options);
  session.run(feeds);
}

void expect_out_of_memory_naming_node(const std::function<void()>& fn) {
  try {
    fn();
    ADD_FAILURE() << "expected an out-of-memory error";
  } catch (const OutOfMemory& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(std::string("node '") + reftest::kNodeName + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("out of memory"), std::string::npos) << m;
  }
}

class HugeShapeKernels : public ::testing::TestWithParam<KernelChoice> {};

TEST_P(HugeShapeKernels, TileWhoseBytesWrapSizeT) {
  // 2^61 float32 elements: under int64's limit, 2^63 bytes.
  expect_out_of_memory_naming_node([&] { run_node("Tile", {f32({1}, {1}), ints({int64_t{1} << 61})}, {}, GetParam()); });
  // A dim that itself overflows: the kernel's own message, naming the node.
  reftest::expect_node_error([&] { run_node("Tile", {f32({2}, {1, 2}), ints({kInt64Max})}, {}, GetParam()); },
                             "too large");
}

TEST_P(HugeShapeKernels, ConstantOfShapeWhoseBytesWrapSizeT) {
  for (int64_t n : {int64_t{1} << 59, int64_t{1} << 61, int64_t{1} << 62})
    expect_out_of_memory_naming_node([&] { run_node("ConstantOfShape", {ints({n, 2})}, {}, GetParam()); });
}

TEST_P(HugeShapeKernels, ExpandWhoseBytesWrapSizeT) {
  expect_out_of_memory_naming_node(
      [&] { run_node("Expand", {i64({1}, {7}), ints({int64_t{1} << 29, int64_t{1} << 29})}, {}, GetParam()); });
  // Strings hold no bytes but one std::string each: once a max_size() length_error.
  expect_out_of_memory_naming_node([&] {
    run_node("Expand", {Tensor::strings({1}, {"a"}), ints({int64_t{1} << 61})}, {}, GetParam());
  });
}

INSTANTIATE_TEST_SUITE_P(ReferenceAndOptimized, HugeShapeKernels,
                         ::testing::Values(KernelChoice::Reference, KernelChoice::Optimized));

TEST(CoreSizes, ConvOverHugeStaticDimFailsAtSessionCreation) {
  // Known dims: refused before oneDNN is handed them (it used to SIGFPE here).
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 17;
  g->add_input("x", TensorType(DType::Float32, DimVector{Dim(1), Dim(2), Dim(int64_t{1} << 62)}));
  Tensor w = f32({4, 2, 3}, std::vector<float>(24, 0.5f));
  g->add_initializer("w", std::make_shared<const Tensor>(w));
  g->add_node("Conv", {"x", "w"}, {"y"}, {}, "", "huge_conv");
  infer_graph(*g);
  g->mark_output(g->value("y"));
  try {
    Session session(g);
    FAIL() << "no error";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("node 'huge_conv' (Conv)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace octet
