// Graph::clone: the same structure (values, types, nodes, attributes, uses, inputs and
// outputs in order) with every constant's tensor shared, and edits to the copy that leave
// the original alone. The quantizer relies on it to rewrite a copy of a 600 MB model
// without copying its weights.
#include <gtest/gtest.h>

#include "ir/patch.h"
#include "pass_test_util.h"

namespace octet {
namespace {

using octet::testing::PassGraph;
using octet::testing::ramp;

std::shared_ptr<Graph> sample_graph() {
  PassGraph b;
  b.input("x", DType::Float32, {2, 4});
  b.init("w", ramp(DType::Float32, {4, 3}, 1));
  b.init("bias", ramp(DType::Float32, {3}, 2));
  b.node("MatMul", {"x", "w"}, {"h"});
  b.node("Add", {"h", "bias"}, {"y"});
  b.node("Softmax", {"y"}, {"p"}, {Attribute::make_int("axis", -1)});
  b.node("Relu", {"h"}, {"r"});  // h has two readers
  b.output("p");
  b.output("r");
  std::shared_ptr<Graph> g = b.done();
  g->name = "sample";
  g->doc_string = "doc";
  return g;
}

TEST(GraphClone, SameStructureSharedConstants) {
  std::shared_ptr<Graph> g = sample_graph();
  std::unique_ptr<Graph> c = g->clone();
  EXPECT_TRUE(verify_graph(*c).empty());
  EXPECT_EQ(c->name, "sample");
  EXPECT_EQ(c->doc_string, "doc");
  EXPECT_EQ(c->opset_imports, g->opset_imports);
  ASSERT_EQ(c->node_count(), g->node_count());
  for (size_t i = 0; i < g->node_count(); ++i) {
    const Node *a = g->nodes()[i], *b = c->nodes()[i];
    EXPECT_NE(a, b);
    EXPECT_EQ(b->graph(), c.get());
    EXPECT_EQ(a->name(), b->name());
    EXPECT_EQ(a->op_type(), b->op_type());
    EXPECT_EQ(a->attributes().size(), b->attributes().size());
    ASSERT_EQ(a->inputs().size(), b->inputs().size());
    for (size_t j = 0; j < a->inputs().size(); ++j) {
      EXPECT_EQ(a->input(j)->name(), b->input(j)->name());
      EXPECT_EQ(b->input(j), c->value(a->input(j)->name()));  // the copy's own values
    }
  }
  EXPECT_EQ(c->node_count(), 4u);
  EXPECT_EQ(c->nodes()[2]->attr_int("axis", 0), -1);
  // Every value: same type, flags and readers; constants share their tensor.
  for (const Value* v : g->values()) {
    const Value* w = c->value(v->name());
    EXPECT_EQ(w->type.to_string(), v->type.to_string()) << v->name();
    EXPECT_EQ(w->is_initializer(), v->is_initializer());
    EXPECT_EQ(w->is_graph_input(), v->is_graph_input());
    EXPECT_EQ(w->is_graph_output(), v->is_graph_output());
    EXPECT_EQ(w->constant().get(), v->constant().get()) << v->name();
    ASSERT_EQ(w->uses().size(), v->uses().size()) << v->name();
    for (size_t u = 0; u < v->uses().size(); ++u) {
      EXPECT_EQ(w->uses()[u].node->name(), v->uses()[u].node->name());
      EXPECT_EQ(w->uses()[u].node->graph(), c.get());
      EXPECT_EQ(w->uses()[u].index, v->uses()[u].index);
    }
    if (v->producer()) {
      EXPECT_EQ(w->producer()->name(), v->producer()->name());
      EXPECT_EQ(w->producer_output(), v->producer_output());
    }
  }
  ASSERT_EQ(c->inputs().size(), 1u);
  EXPECT_EQ(c->inputs()[0]->name(), "x");
  ASSERT_EQ(c->outputs().size(), 2u);
  EXPECT_EQ(c->outputs()[0]->name(), "p");
  EXPECT_EQ(c->outputs()[1]->name(), "r");
  EXPECT_EQ(c->value("h")->uses().size(), 2u);

  // Both compute the same.
  const NamedTensors in{{"x", ramp(DType::Float32, {2, 4}, 3)}};
  const NamedTensors a = Session(std::shared_ptr<const Graph>(g)).run(in);
  const NamedTensors b = Session(std::shared_ptr<const Graph>(std::move(c))).run(in);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].second.to_float_vector(), b[i].second.to_float_vector());
}

TEST(GraphClone, EditingTheCopyLeavesTheOriginal) {
  std::shared_ptr<Graph> g = sample_graph();
  const std::shared_ptr<const Tensor> w = g->value("w")->constant();
  std::unique_ptr<Graph> c = g->clone();
  // Replace the copy's Relu by an Identity and drop its weight's reader.
  GraphPatch p(*c);
  Node* relu = c->nodes()[3];
  Node* id = p.add_node("Identity", {c->value("h")}, 1, {}, "", "id");
  p.replace_uses(c->value("r"), id->output(0));
  p.remove_node(relu);
  p.apply();
  EXPECT_TRUE(verify_graph(*c).empty());
  EXPECT_EQ(c->nodes()[3]->op_type(), "Identity");
  EXPECT_EQ(g->node_count(), 4u);
  EXPECT_EQ(g->nodes()[3]->op_type(), "Relu");
  EXPECT_EQ(g->value("h")->uses().size(), 2u);
  EXPECT_EQ(g->outputs()[1]->name(), "r");
  EXPECT_EQ(g->value("w")->constant(), w);
  EXPECT_TRUE(verify_graph(*g).empty());
}

}  // namespace
}  // namespace octet
