// The pieces behind `octet run`: tensor statistics, allclose comparison, the --random
// rules, and ONNX test-data folders.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "onnx/model_io.h"
#include "onnx/test_data.h"
#include "onnx_test_util.h"
#include "ops_shape_test_util.h"
#include "runtime/random_inputs.h"
#include "runtime/tensor_check.h"

namespace octet {
namespace {

using namespace octet::testing;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(TensorStats, CountsNanInfAndSummarizesFiniteValues) {
  TensorStats s = tensor_stats(Tensor::from_vector<float>({2, 3}, {1, -2, kNaN, kInf, -kInf, 4}));
  EXPECT_EQ(s.count, 6);
  EXPECT_EQ(s.finite, 3);
  EXPECT_EQ(s.nan, 1);
  EXPECT_EQ(s.pos_inf, 1);
  EXPECT_EQ(s.neg_inf, 1);
  EXPECT_EQ(*s.min, -2);
  EXPECT_EQ(*s.max, 4);
  EXPECT_EQ(*s.mean, 1);
  TensorStats ints = tensor_stats(Tensor::from_vector<int64_t>({3}, {int64_t{1} << 40, 0, -5}));
  EXPECT_EQ(*ints.max, static_cast<double>(int64_t{1} << 40));
  EXPECT_FALSE(tensor_stats(Tensor(DType::Float32, {0})).min.has_value());
  EXPECT_FALSE(tensor_stats(Tensor::from_vector<float>({1}, {kNaN})).mean.has_value());
  Tensor half(DType::Float16, {2});
  uint16_t h[2] = {float_to_half(2.0f), float_to_half(-0.5f)};
  std::memcpy(half.mutable_raw(), h, 4);
  EXPECT_EQ(*tensor_stats(half).max, 2.0);
  EXPECT_EQ(*tensor_stats(half).min, -0.5);
}

TEST(Compare, AllcloseSemantics) {
  auto f = [](std::vector<float> v) { return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v); };
  // |a - e| <= atol + rtol * |e|
  Comparison c = compare_tensors(f({1.0f, 100.0f}), f({1.0f + 9e-6f, 100.009f}), 1e-4, 1e-5);
  EXPECT_TRUE(c.ok());
  EXPECT_NEAR(c.max_abs_error, 0.009, 1e-5);
  EXPECT_NEAR(c.max_rel_error, 9e-5, 1e-6);
  c = compare_tensors(f({1.0f, 2.0f, 3.0f}), f({1.0f, 2.1f, 3.5f}), 1e-4, 1e-5);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.mismatched, 2);
  EXPECT_EQ(*c.worst_index, std::vector<int64_t>{2});
  EXPECT_FLOAT_EQ(c.worst_actual, 3.0);
  EXPECT_FLOAT_EQ(c.worst_expected, 3.5);
  // NaN matches NaN, equal infinities match, NaN against a number does not.
  EXPECT_TRUE(compare_tensors(f({kNaN, kInf, -kInf}), f({kNaN, kInf, -kInf}), 0, 0).ok());
  c = compare_tensors(f({kNaN, 1}), f({0, 1}), 1, 1);
  EXPECT_EQ(c.mismatched, 1);
  EXPECT_TRUE(std::isinf(c.max_abs_error));
  EXPECT_FALSE(compare_tensors(f({kInf}), f({-kInf}), 1, 1).ok());
  EXPECT_FALSE(compare_tensors(f({1e30f}), f({kInf}), 1e-4, 1e-5).ok());
  // Nothing to index when everything is equal.
  EXPECT_FALSE(compare_tensors(f({1, 2}), f({1, 2}), 0, 0).worst_index.has_value());
}

TEST(Compare, ShapesDtypesIntegersAndStrings) {
  auto a = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(compare_tensors(a, Tensor::from_vector<float>({4}, {1, 2, 3, 4}), 0, 0).problem, "shape [2,2], expected [4]");
  EXPECT_EQ(compare_tensors(a, Tensor::from_vector<double>({2, 2}, {1, 2, 3, 4}), 0, 0).problem,
            "dtype float32, expected float64");
  // int64 values that are equal as doubles still differ.
  const int64_t big = (int64_t{1} << 60) + 1;
  Comparison c = compare_tensors(Tensor::from_vector<int64_t>({2}, {big, 5}),
                                 Tensor::from_vector<int64_t>({2}, {big - 1, 5}), 0, 0);
  EXPECT_EQ(c.mismatched, 1);
  EXPECT_EQ(*c.worst_index, std::vector<int64_t>{0});
  EXPECT_TRUE(compare_tensors(Tensor::from_vector<int64_t>({1}, {7}), Tensor::from_vector<int64_t>({1}, {8}), 0, 1).ok());
  EXPECT_FALSE(compare_tensors(Tensor::strings({1}, {"a"}), Tensor::strings({1}, {"b"}), 0, 0).ok());
  // Worst index of a multi-dim tensor is a multi-index.
  c = compare_tensors(a, Tensor::from_vector<float>({2, 2}, {1, 2, 3, 5}), 0, 0);
  EXPECT_EQ(*c.worst_index, (std::vector<int64_t>{1, 1}));
}

// input_ids -> Reshape -> Gather(vocab 1000); attention_mask, token_type_ids -> Gather(2);
// positions -> Gather(128); an unrelated int input; a float input.
struct EncoderGraph : GraphBuilder {
  EncoderGraph() {
    input("input_ids", DType::Int64, DimVector{S("batch"), S("seq")});
    input("attention_mask", DType::Int64, DimVector{S("batch"), S("seq")});
    input("token_type_ids", DType::Int64, DimVector{S("batch"), S("seq")});
    input("position_ids", DType::Int64, DimVector{S("batch"), S("seq")});
    input("past_len", DType::Int64, DimVector{});
    input("bool_flags", DType::Bool, DimVector{2});
    input("pixel", DType::Float16, DimVector{S("batch"), 3});
    input("anon", DType::Int32, DimVector{Dim::fresh(), 4});
    floats("word", std::vector<float>(1000 * 2), {1000, 2});
    floats("types", std::vector<float>(2 * 2), {2, 2});
    floats("pos", std::vector<float>(128 * 2), {128, 2});
    ints("shape", {-1});
    node("Cast", {"input_ids"}, {"ids32"}, {I("to", 6)});
    node("Reshape", {"ids32", "shape"}, {"flat"});
    node("Gather", {"word", "flat"}, {"emb"}, {}, "word_gather");
    node("Gather", {"types", "token_type_ids"}, {"temb"});
    node("Gather", {"pos", "position_ids"}, {"pemb"});
    infer();
  }
};

TEST(RandomInputs, RulesForTransformerInputs) {
  EncoderGraph m;
  Bindings b = {{"batch", 2}, {"seq", 5}};
  auto fill = [&](const std::string& name) { return choose_input_fill(*m.g.value(name), b); };
  using R = InputFill::Rule;
  EXPECT_EQ(fill("input_ids").rule, R::Indices);
  EXPECT_EQ(fill("input_ids").limit, 1000);
  EXPECT_TRUE(contains(fill("input_ids").description, "word_gather"));
  EXPECT_EQ(fill("attention_mask").rule, R::Ones);
  EXPECT_EQ(fill("token_type_ids").rule, R::Zeros);
  EXPECT_EQ(fill("position_ids").rule, R::Positions);
  EXPECT_EQ(fill("position_ids").limit, 128);
  EXPECT_EQ(fill("past_len").rule, R::Ones);
  EXPECT_EQ(fill("bool_flags").rule, R::Ones);
  EXPECT_EQ(fill("pixel").rule, R::Normal);

  std::mt19937_64 rng(7);
  Tensor ids = make_input(DType::Int64, {2, 5}, fill("input_ids"), rng);
  for (int64_t v : ids.to_int64_vector()) EXPECT_TRUE(v >= 0 && v < 1000) << v;
  EXPECT_EQ(make_input(DType::Int64, {2, 3}, fill("position_ids"), rng).to_int64_vector(),
            (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(make_input(DType::Bool, {2}, fill("bool_flags"), rng).to_int64_vector(), (std::vector<int64_t>{1, 1}));
  // int8 ids stay representable.
  for (int64_t v : make_input(DType::Int8, {64}, {R::Indices, 1000, ""}, rng).to_int64_vector())
    EXPECT_TRUE(v >= 0 && v < 128) << v;
  // Normal draws: plausible moments, converted to half precision, same seed same data.
  std::mt19937_64 r1(3), r2(3);
  Tensor x = make_input(DType::Float32, {4000}, {R::Normal, 0, ""}, r1);
  TensorStats s = tensor_stats(x);
  EXPECT_NEAR(*s.mean, 0, 0.1);
  EXPECT_LT(*s.max, 6);
  Tensor y = make_input(DType::Float32, {4000}, {R::Normal, 0, ""}, r2);
  EXPECT_TRUE(compare_tensors(x, y, 0, 0).ok());
  Tensor h = make_input(DType::Float16, {8}, {R::Normal, 0, ""}, r1);
  EXPECT_EQ(h.dtype(), DType::Float16);
  expect_error([&] { make_input(DType::String, {1}, {R::Ones, 0, ""}, rng); }, "--random cannot make string");
}

TEST(RandomInputs, ShapesFromBindingsAndClearErrors) {
  EncoderGraph m;
  EXPECT_EQ(concrete_input_shape(*m.g.value("input_ids"), {{"batch", 2}, {"seq", 9}}), (std::vector<int64_t>{2, 9}));
  EXPECT_EQ(concrete_input_shape(*m.g.value("past_len"), {}), std::vector<int64_t>{});
  expect_error([&] { concrete_input_shape(*m.g.value("input_ids"), {{"batch", 2}}); },
               "input 'input_ids' [batch,seq]: dim 1 'seq' is not bound, so --random cannot size it; add --dim seq=N");
  expect_error([&] { concrete_input_shape(*m.g.value("anon"), {}); }, "--dim anon:0=N");
  Value* unranked = m.g.add_input("unranked", TensorType(DType::Float32, std::nullopt));
  expect_error([&] { concrete_input_shape(*unranked, {}); }, "input 'unranked' has unknown rank");
}

void write_tensor_pb(const fs::path& path, const Tensor& t, const std::string& name) {
  onnx::TensorProto p;
  tensor_to_proto(t, &p);
  p.set_name(name);
  write_file(path, p.SerializeAsString());
}

TEST(TestData, FindsSetsInNaturalOrderAndMatchesByNameOrNumber) {
  TempDir dir;
  for (int i : {10, 2, 0}) {
    fs::path set = dir / ("test_data_set_" + std::to_string(i));
    // Named files go by name (here in reverse order), unnamed ones by number.
    write_tensor_pb(set / "input_0.pb", Tensor::from_vector<int64_t>({1}, {i}), "mask");
    write_tensor_pb(set / "input_1.pb", Tensor::from_vector<int64_t>({1}, {7}), "ids");
    write_tensor_pb(set / "input_2.pb", Tensor::from_vector<int64_t>({1}, {8}), "");
    write_tensor_pb(set / "output_0.pb", Tensor::from_vector<float>({1}, {1}), "y");
  }
  fs::create_directories(dir / "not_a_set");
  auto sets = find_test_data_sets(dir.path());
  ASSERT_EQ(sets.size(), 3u);
  EXPECT_EQ(sets[0].filename(), "test_data_set_0");
  EXPECT_EQ(sets[1].filename(), "test_data_set_2");
  EXPECT_EQ(sets[2].filename(), "test_data_set_10");
  EXPECT_EQ(find_test_data_sets(sets[1]), std::vector<fs::path>{sets[1]});

  TestDataSet set = load_test_data_set(sets[2], {"ids", "mask", "extra"}, {"y"});
  ASSERT_EQ(set.inputs.size(), 3u);
  EXPECT_EQ(set.inputs[0].name, "mask");
  EXPECT_EQ(set.inputs[0].tensor.to_int64_vector(), std::vector<int64_t>{10});
  EXPECT_EQ(set.inputs[1].name, "ids");
  EXPECT_EQ(set.inputs[2].name, "extra");
  EXPECT_EQ(set.inputs[2].file.filename(), "input_2.pb");
  ASSERT_EQ(set.outputs.size(), 1u);
  EXPECT_EQ(set.outputs[0].name, "y");
}

TEST(TestData, Errors) {
  TempDir dir;
  expect_error([&] { find_test_data_sets(dir / "nope"); }, "nope: no such directory");
  expect_error([&] { find_test_data_sets(dir.path()); }, "no test data sets");
  write_tensor_pb(dir / "s" / "input_0.pb", Tensor::from_vector<int64_t>({1}, {1}), "a");
  write_tensor_pb(dir / "s" / "input_1.pb", Tensor::from_vector<int64_t>({1}, {1}), "b");
  expect_error([&] { load_test_data_set(dir / "s", {"a"}, {}); },
               "input_1.pb: tensor 'b': the model has 1 input(s) (a), so input_1.pb matches none of them");
  write_tensor_pb(dir / "t" / "input_0.pb", Tensor::from_vector<int64_t>({1}, {1}), "b");
  write_tensor_pb(dir / "t" / "input_1.pb", Tensor::from_vector<int64_t>({1}, {1}), "");
  expect_error([&] { load_test_data_set(dir / "t", {"a", "b"}, {}); }, "input 'b' is already given by input_0.pb");
  write_file(dir / "u" / "input_0.pb", "garbage that is not a tensor proto \xff\xff\xff");
  expect_error([&] { load_test_data_set(dir / "u", {"a"}, {}); }, "input_0.pb");
}

}  // namespace
}  // namespace octet
