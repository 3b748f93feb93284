// If: the output types its inference rule gives, and the kernel running the chosen branch
// through its own Session with the outer values the branches read (an outer input, an
// outer initializer, a value an outer node computed) - the shape of optimum's merged
// decoders, whose two branches read the outer graph's weights and return caches of
// different lengths.
#include <gtest/gtest.h>

#include "onnx/model_io.h"
#include "onnx_test_util.h"
#include "runtime/session.h"

namespace octet::testing {
namespace {

onnx::GraphProto* add_branch(onnx::NodeProto* node, const std::string& name) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

// then: (relu(x) + w, concat(x, x)); else: (relu(x) * w, x). The second output's length
// differs by branch, like present.* of a merged decoder.
onnx::ModelProto branchy_model() {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "cond", onnx::TensorProto::BOOL, {std::string("c")});
  add_input(g, "x", onnx::TensorProto::FLOAT, {std::string("n")});
  add_raw_initializer(g, "w", onnx::TensorProto::FLOAT, {3}, bytes_of(std::vector<float>{1, 2, 3}));
  add_node(g, "Relu", {"x"}, {"h"}, "relu");
  auto* node = add_node(g, "If", {"cond"}, {"y", "z"}, "if");
  auto* then_g = add_branch(node, "then_branch");
  add_node(then_g, "Add", {"h", "w"}, {"t"}, "then_add");
  auto* cat = add_node(then_g, "Concat", {"x", "x"}, {"tz"}, "then_cat");
  auto* axis = cat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  add_output(then_g, "t", onnx::TensorProto::FLOAT, {3});
  add_output(then_g, "tz", onnx::TensorProto::FLOAT, {std::string("then_len")});
  auto* else_g = add_branch(node, "else_branch");
  add_node(else_g, "Mul", {"h", "w"}, {"e"}, "else_mul");
  add_node(else_g, "Identity", {"x"}, {"ez"}, "else_id");
  add_output(else_g, "e", onnx::TensorProto::FLOAT, {3});
  add_output(else_g, "ez", onnx::TensorProto::FLOAT, {std::string("else_len")});
  add_output(g, "y", onnx::TensorProto::FLOAT, {3});
  add_output(g, "z", onnx::TensorProto::FLOAT, {std::string("z_len")});
  return m;
}

Model load(const onnx::ModelProto& m) { return load_model_from_memory(m.SerializeAsString(), "if_test.onnx"); }

Tensor bools(std::vector<int> v) {
  Tensor t(DType::Bool, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.mutable_data<bool>()[i] = v[i] != 0;
  return t;
}

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.numel()); }

TEST(ControlFlowIf, OutputsTypedFromBothBranches) {
  Model model = load(branchy_model());
  const Value* y = model.graph->value("y");
  const Value* z = model.graph->value("z");
  ASSERT_TRUE(y->type.dims && z->type.dims);
  EXPECT_EQ(y->type.to_string(), "float32[3]");  // both branches say 3
  EXPECT_EQ(z->type.dims->size(), 1u);           // a length only the run decides
  EXPECT_FALSE((*z->type.dims)[0].constant());
}

TEST(ControlFlowIf, RunsTheChosenBranchOnOuterValues) {
  Model model = load(branchy_model());
  for (KernelChoice choice : {KernelChoice::Optimized, KernelChoice::Reference}) {
    SessionOptions o;
    o.kernels = choice;
    Session s(std::shared_ptr<const Graph>(std::move(model.graph)), o);
    const Tensor x = Tensor::from_vector<float>({3}, {-1, 0.5f, 2});
    for (bool cond : {true, false, true}) {  // each branch's session is kept and reused
      NamedTensors out = s.run({{"cond", bools({cond})}, {"x", x}});
      ASSERT_EQ(out.size(), 2u);
      if (cond) {
        EXPECT_EQ(values(out[0].second), (std::vector<float>{1, 2.5f, 5}));
        EXPECT_EQ(values(out[1].second), (std::vector<float>{-1, 0.5f, 2, -1, 0.5f, 2}));
      } else {
        EXPECT_EQ(values(out[0].second), (std::vector<float>{0, 1, 6}));
        EXPECT_EQ(values(out[1].second), (std::vector<float>{-1, 0.5f, 2}));
      }
    }
    model = load(branchy_model());
  }
}

TEST(ControlFlowIf, BadConditionAndBranchesAreNamed) {
  onnx::ModelProto m = branchy_model();
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  expect_error([&] { load(m); }, "node 'if' (If): cond is float32[c]; it must be bool");

  m = branchy_model();
  m.mutable_graph()->mutable_node(1)->mutable_attribute(1)->mutable_g()->mutable_output()->RemoveLast();
  expect_error([&] { load(m); }, "node 'if' (If): has 2 outputs but then_branch gives 2 and else_branch 1");

  m = branchy_model();
  Model model = load(m);
  Session s(std::shared_ptr<const Graph>(std::move(model.graph)));
  expect_error([&] { s.run({{"cond", bools({1, 0})},
                            {"x", Tensor::from_vector<float>({3}, {1, 2, 3})}}); },
               "node 'if' (If): cond is bool[2]; it must be a bool tensor of one element");
}

}  // namespace
}  // namespace octet::testing
