// Session behaviour that users rely on: several (batch, seq) bindings per Session,
// concurrent run() calls giving identical results, and clear input errors.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <thread>

#include "onnx/model_io.h"
#include "runtime/session.h"

namespace octet {
namespace {

std::shared_ptr<const Graph> load_fixture(const std::string& name) {
  Model m = load_model(std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/" + name);
  return std::shared_ptr<const Graph>(std::move(m.graph));
}

NamedTensors bert_inputs(int64_t batch, int64_t seq) {
  std::vector<int64_t> ids(static_cast<size_t>(batch * seq)), mask(ids.size(), 1), types(ids.size(), 0);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 131 + 7) % 1000);
  return {{"input_ids", Tensor::from_vector<int64_t>({batch, seq}, ids)},
          {"attention_mask", Tensor::from_vector<int64_t>({batch, seq}, mask)},
          {"token_type_ids", Tensor::from_vector<int64_t>({batch, seq}, types)}};
}

bool bitwise_equal(const NamedTensors& a, const NamedTensors& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const Tensor &x = a[i].second, &y = b[i].second;
    if (x.shape() != y.shape() || x.bytes() != y.bytes()) return false;
    if (std::memcmp(x.raw(), y.raw(), x.bytes()) != 0) return false;
  }
  return true;
}

TEST(Session, DifferentBindingsPerRun) {
  Session s(load_fixture("bert_tiny.onnx"));
  for (auto [batch, seq] : {std::pair<int64_t, int64_t>{1, 1}, {1, 7}, {3, 16}, {2, 64}}) {
    NamedTensors out = s.run(bert_inputs(batch, seq));
    EXPECT_EQ(out[0].second.shape(), (std::vector<int64_t>{batch, seq, 64}));
    EXPECT_EQ(out[1].second.shape(), (std::vector<int64_t>{batch, 2}));
  }
}

// The observer sees every computed value once, in execution order after the graph
// inputs, with the data the graph output gets; it changes nothing about the outputs.
TEST(Session, ObserverSeesEveryValueOnce) {
  auto graph = load_fixture("bert_tiny.onnx");
  Session s(graph);
  const NamedTensors expected = s.run(bert_inputs(1, 9));
  std::map<std::string, int> seen;
  std::vector<std::string> order;
  std::vector<float> observed_output;
  NamedTensors out = s.run(bert_inputs(1, 9), [&](const Value& v, const Tensor& t) {
    ++seen[v.name()];
    order.push_back(v.name());
    if (v.name() == expected[0].first) {
      const float* p = t.data<float>();
      observed_output.assign(p, p + t.numel());
    }
  });
  EXPECT_TRUE(bitwise_equal(out, expected));
  ASSERT_EQ(order.size(), seen.size()) << "a value was observed twice";
  for (const char* input : {"input_ids", "attention_mask", "token_type_ids"}) EXPECT_EQ(seen[input], 1);
  for (const Node* n : graph->nodes())
    for (const Value* o : n->outputs())
      if (o && !o->uses().empty()) {
        EXPECT_EQ(seen[o->name()], 1) << o->name();
      }
  const Tensor& y = expected[0].second;
  ASSERT_EQ(observed_output.size(), static_cast<size_t>(y.numel()));
  EXPECT_EQ(0, std::memcmp(observed_output.data(), y.raw(), y.bytes()));
}

TEST(Session, ConcurrentRunsGiveIdenticalResults) {
  Session s(load_fixture("bert_tiny.onnx"));
  const std::vector<std::pair<int64_t, int64_t>> bindings = {{1, 5}, {2, 9}, {3, 17}, {1, 32}};
  std::vector<NamedTensors> expected;
  for (auto [b, q] : bindings) expected.push_back(s.run(bert_inputs(b, q)));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < 6; ++iter) {
        size_t k = static_cast<size_t>(t + iter) % bindings.size();
        if (!bitwise_equal(s.run(bert_inputs(bindings[k].first, bindings[k].second)), expected[k])) ++mismatches[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

void expect_run_error(const Session& s, const NamedTensors& in, const std::string& needle) {
  try {
    s.run(in);
    ADD_FAILURE() << "expected an error containing: " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Session, InputErrorsAreClear) {
  Session s(load_fixture("bert_tiny.onnx"));
  NamedTensors in = bert_inputs(1, 4);
  expect_run_error(s, {in[0], in[1]}, "input 'token_type_ids' (int64[batch,seq]) is missing");
  NamedTensors wrong_dtype = in;
  wrong_dtype[0].second = Tensor::from_vector<int32_t>({1, 4}, {1, 2, 3, 4});
  expect_run_error(s, wrong_dtype, "input 'input_ids' is int32, the model expects int64");
  NamedTensors wrong_rank = in;
  wrong_rank[0].second = Tensor::from_vector<int64_t>({4}, {1, 2, 3, 4});
  expect_run_error(s, wrong_rank, "input 'input_ids' has rank 1");
  NamedTensors conflict = in;
  conflict[1].second = Tensor::from_vector<int64_t>({1, 5}, {1, 1, 1, 1, 1});
  expect_run_error(s, conflict, "'seq' is already 4");
  NamedTensors unknown = in;
  unknown.emplace_back("pixels", Tensor::from_vector<float>({1}, {0}));
  expect_run_error(s, unknown, "'pixels' is not an input of this model");
  NamedTensors twice = in;
  twice.push_back(in[0]);
  expect_run_error(s, twice, "given twice");
}

TEST(Session, UnsupportedOpsAreListedAtConstruction) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 17;
  g->opset_imports["custom.domain"] = 1;
  g->add_input("x", TensorType(DType::Float32, DimVector{2}));
  g->add_node("FancyOp", {"x"}, {"a"}, {}, "custom.domain");
  g->add_node("FancyOp", {"a"}, {"b"}, {}, "custom.domain");
  g->add_node("NonMaxSuppression", {"b"}, {"c"});
  g->add_node("Relu", {"c"}, {"y"});
  g->mark_output(g->value("y"));
  try {
    Session s(g);
    ADD_FAILURE() << "Session accepted unsupported ops";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("2 op(s) octet cannot run"), std::string::npos) << msg;
    EXPECT_NE(msg.find("custom.domain::FancyOp (opset 1, node 'FancyOp' and 1 more)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ai.onnx::NonMaxSuppression (opset 17, node 'NonMaxSuppression')"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace octet
