// InputBinder (runtime/input_binding.h): the compiled binding of a run's input shapes, and
// Session::run_positional, which uses it without name lookups.
#include <gtest/gtest.h>

#include <cstring>

#include "onnx/model_io.h"
#include "runtime/input_binding.h"
#include "runtime/session.h"

namespace octet {
namespace {

void expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing: " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// ids [batch, seq], mask [batch, past + seq], past [batch, 2, past, 4]: optimum's decoder inputs.
InputBinder decoder_binder() {
  const Dim batch = Dim::symbol("batch"), seq = Dim::symbol("seq"), past = Dim::symbol("past");
  InputBinder b;
  const DimVector mask{batch, past + seq}, ids{batch, seq}, cache{batch, 2, past, 4};
  b.add("attention_mask", &mask);  // the expression comes first: checked once all are bound
  b.add("input_ids", &ids);
  b.add("past", &cache);
  b.add("opaque", nullptr);
  return b;
}

TEST(InputBinder, BindsSymbolsAndChecksExpressionsAfterAllInputs) {
  InputBinder b = decoder_binder();
  InputBinder::State s = b.start();
  b.bind(0, {2, 8}, s);
  b.bind(1, {2, 1}, s);
  b.bind(2, {2, 2, 7, 4}, s);
  b.bind(3, {5, 5, 5}, s);  // unknown rank: anything goes
  b.finish(s);
  EXPECT_EQ(b.bindings(s), (Bindings{{"batch", 2}, {"past", 7}, {"seq", 1}}));

  InputBinder::State wrong = b.start();
  b.bind(0, {2, 9}, wrong);  // past + seq is 8
  b.bind(1, {2, 1}, wrong);
  b.bind(2, {2, 2, 7, 4}, wrong);
  expect_error([&] { b.finish(wrong); }, "input 'attention_mask' dim 1 is 9, expected 8 (");
}

TEST(InputBinder, ExpressionsNotDecidedByTheInputsAreLeftUnchecked) {
  InputBinder b = decoder_binder();
  InputBinder::State s = b.start();
  b.bind(0, {1, 3}, s);  // no 'past' bound: past + seq cannot be evaluated
  b.bind(1, {1, 1}, s);
  b.finish(s);
  EXPECT_EQ(b.bindings(s), (Bindings{{"batch", 1}, {"seq", 1}}));
}

TEST(InputBinder, ErrorsNameTheInputAndTheDim) {
  InputBinder b = decoder_binder();
  InputBinder::State s = b.start();
  b.bind(1, {2, 1}, s);
  expect_error([&] { b.bind(2, {3, 2, 7, 4}, s); }, "input 'past' dim 0 is 3 but 'batch' is already 2 from another input");
  expect_error([&] { b.bind(2, {2, 3, 7, 4}, s); }, "input 'past' dim 1 is 3, expected 2");
  expect_error([&] { b.bind(2, {2, 2, 7}, s); }, "input 'past' has rank 3 (shape [2,2,7]), expected rank 4");
}

std::shared_ptr<const Graph> bert_tiny() {
  Model m = load_model(std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/bert_tiny.onnx");
  return std::shared_ptr<const Graph>(std::move(m.graph));
}

TEST(SessionPositional, MatchesNamedRunsAndReturnsOnlyTheWantedOutputs) {
  Session s(bert_tiny());
  const int64_t batch = 2, seq = 5;
  std::vector<int64_t> ids(batch * seq), mask(ids.size(), 1), types(ids.size(), 0);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 37 + 3) % 900);
  NamedTensors named = {{"token_type_ids", Tensor::from_vector<int64_t>({batch, seq}, types)},
                        {"input_ids", Tensor::from_vector<int64_t>({batch, seq}, ids)},
                        {"attention_mask", Tensor::from_vector<int64_t>({batch, seq}, mask)}};
  NamedTensors expected = s.run(named);
  ASSERT_FALSE(expected.empty());
  Session::PositionalTensors positional;
  for (const auto& [name, t] : named) positional.emplace_back(s.input_position(name), t);
  const int last = static_cast<int>(expected.size()) - 1;
  std::vector<Tensor> got = s.run_positional(positional, {last, 0});
  ASSERT_EQ(got.size(), 2u);
  for (auto [g, e] : {std::pair<int, int>{0, last}, {1, 0}}) {
    const Tensor &x = got[g], &y = expected[e].second;
    ASSERT_EQ(x.shape(), y.shape());
    EXPECT_EQ(std::memcmp(x.raw(), y.raw(), x.bytes()), 0) << "output " << e;
  }
  EXPECT_EQ(s.input_position("pixels"), -1);
  EXPECT_EQ(s.output_position(expected[0].first), 0);
  expect_error([&] { s.run_positional({{7, named[0].second}}, {0}); }, "input position 7 is not one of");
  expect_error([&] { s.run_positional(positional, {9}); }, "output position 9 is not one of");
  Session::PositionalTensors twice = positional;
  twice.push_back(positional[0]);
  expect_error([&] { s.run_positional(twice, {0}); }, "given twice");
  expect_error([&] { s.run_positional({positional[0], positional[1]}, {0}); }, "is missing");
}

}  // namespace
}  // namespace octet
