#include <gtest/gtest.h>

#include "ir/graph.h"
#include "ir/patch.h"
#include "octet/error.h"

namespace octet {
namespace {

// x -> Relu -> r -> Add(r, w) -> y ; w is an initializer also read by a second Add.
struct SmallGraph {
  Graph g;
  Value* x;
  Value* w;
  Node* relu;
  Node* add;
  Node* add2;
  SmallGraph() {
    g.opset_imports[""] = 17;
    x = g.add_input("x", TensorType(DType::Float32, DimVector{Dim::symbol("n"), 4}));
    w = g.add_initializer("w", std::make_shared<Tensor>(Tensor::from_vector<float>({4}, {1, 2, 3, 4})));
    relu = g.add_node("Relu", {"x"}, {"r"});
    add = g.add_node("Add", {"r", "w"}, {"y"});
    add2 = g.add_node("Add", {"x", "w"}, {"z"});
    g.mark_output(g.value("y"));
    g.mark_output(g.value("z"));
  }
};

TEST(Graph, UsesAreTrackedAndSharedConstantsVisible) {
  SmallGraph s;
  EXPECT_TRUE(verify_graph(s.g).empty());
  EXPECT_EQ(s.w->uses().size(), 2u);  // "is this initializer shared?" -> yes
  EXPECT_EQ(s.x->uses().size(), 2u);
  EXPECT_EQ(s.g.value("r")->producer(), s.relu);
  EXPECT_EQ(s.relu->describe(), "node 'Relu' (Relu)");
  EXPECT_EQ(s.add->opset(), 17);
}

TEST(Graph, DuplicateAndUndefinedNamesAreErrors) {
  SmallGraph s;
  EXPECT_THROW(s.g.add_input("x", TensorType()), Error);
  EXPECT_THROW(s.g.add_node("Relu", {"nope"}, {"q"}), Error);
  EXPECT_THROW(s.g.add_node("Relu", {"x"}, {"r"}), Error);  // r already produced
}

TEST(Graph, SortsTopologicallyAndDetectsCycles) {
  Graph h;
  h.add_input("a", TensorType(DType::Float32, DimVector{2}));
  Node* second = h.add_node("Neg", {"a"}, {"b"});
  Node* first = h.add_node("Relu", {"a"}, {"c"});
  h.sort_topologically();
  EXPECT_EQ(h.nodes()[0], second);  // already valid order kept
  EXPECT_EQ(h.nodes()[1], first);
  EXPECT_TRUE(verify_graph(h).empty());
}

TEST(Patch, ReplacesANodeAndKeepsTheOutputName) {
  SmallGraph s;
  GraphPatch p(s.g);
  Node* sub = p.add_node("Sub", {s.g.value("r"), s.w}, 1);
  sub->outputs()[0]->type = s.g.value("y")->type;
  p.replace_uses(s.g.value("y"), sub->outputs()[0]);
  p.remove_node(s.add);
  p.apply();
  EXPECT_TRUE(verify_graph(s.g).empty());
  Value* y = s.g.value("y");  // interface name survives
  EXPECT_EQ(y->producer()->op_type(), "Sub");
  EXPECT_TRUE(y->is_graph_output());
  EXPECT_EQ(s.w->uses().size(), 2u);
  EXPECT_EQ(s.g.node_count(), 3u);
}

TEST(Patch, RejectsRemovingAProducerStillInUseAndLeavesGraphUnchanged) {
  SmallGraph s;
  GraphPatch p(s.g);
  p.remove_node(s.relu);  // r is still read by Add
  EXPECT_THROW(p.apply(), Error);
  EXPECT_TRUE(verify_graph(s.g).empty());
  EXPECT_EQ(s.g.node_count(), 3u);
}

TEST(Patch, RejectsCycles) {
  SmallGraph s;
  GraphPatch p(s.g);
  p.set_input(s.relu, 0, s.g.value("y"));  // relu would read its own descendant
  EXPECT_THROW(p.apply(), Error);
  EXPECT_TRUE(verify_graph(s.g).empty());
}

TEST(Patch, RejectsTypeChangingReplacement) {
  SmallGraph s;
  GraphPatch p(s.g);
  Value* ints = p.add_initializer("i", Tensor::from_vector<int64_t>({4}, {1, 2, 3, 4}));
  EXPECT_THROW(p.replace_uses(s.w, ints), Error);
}

TEST(Patch, ClonesASharedInitializerForOneConsumer) {
  // The SmoothQuant rule: never mutate a shared constant; give one consumer its own copy.
  SmallGraph s;
  GraphPatch p(s.g);
  Value* clone = p.add_initializer("w", Tensor::from_vector<float>({4}, {2, 4, 6, 8}));
  EXPECT_NE(clone->name(), "w");
  p.set_input(s.add, 1, clone);
  p.apply();
  EXPECT_TRUE(verify_graph(s.g).empty());
  EXPECT_EQ(s.w->uses().size(), 1u);
  EXPECT_EQ(s.w->constant()->data<float>()[0], 1.0f);
  EXPECT_EQ(s.add->input(1)->constant()->data<float>()[0], 2.0f);
}

TEST(Patch, UnappliedPatchChangesNothing) {
  SmallGraph s;
  {
    GraphPatch p(s.g);
    p.add_node("Relu", {s.x}, 1);
    p.remove_node(s.add2);
  }
  EXPECT_EQ(s.g.node_count(), 3u);
  EXPECT_TRUE(verify_graph(s.g).empty());
}

TEST(Patch, RemovesOnlyUnreadInitializers) {
  Graph g;
  g.add_input("x", TensorType(DType::Float32, DimVector{2}));
  Value* w = g.add_initializer("w", std::make_shared<Tensor>(Tensor::from_vector<float>({2}, {1, 2})));
  Value* unused = g.add_initializer("unused", std::make_shared<Tensor>(Tensor::scalar<float>(1)));
  g.add_node("Add", {"x", "w"}, {"y"});
  g.mark_output(g.value("y"));
  {
    GraphPatch p(g);
    p.remove_initializer(w);
    EXPECT_THROW(p.apply(), Error);  // still read by Add
  }
  GraphPatch p(g);
  p.remove_initializer(unused);
  EXPECT_EQ(p.counts().initializers_removed, 1u);
  p.apply();
  EXPECT_EQ(g.find_value("unused"), nullptr);
  EXPECT_TRUE(verify_graph(g).empty());

  g.mark_output(w);  // an initializer that is a graph output is part of the interface
  GraphPatch q(g);
  Node* add = g.value("y")->producer();
  q.set_input(add, 1, g.value("x"));
  q.remove_initializer(w);
  EXPECT_THROW(q.apply(), Error);
  EXPECT_NE(g.find_value("w"), nullptr);
}

TEST(Patch, CountsWhatItWillChange) {
  SmallGraph s;
  GraphPatch p(s.g);
  Node* sub = p.add_node("Sub", {s.g.value("r"), s.w}, 1);
  p.add_initializer("k", Tensor::scalar<float>(2));
  p.replace_uses(s.g.value("y"), sub->outputs()[0]);
  p.remove_node(s.add);
  GraphPatch::Counts c = p.counts();
  EXPECT_EQ(c.nodes_added, 1u);
  EXPECT_EQ(c.nodes_removed, 1u);
  EXPECT_EQ(c.initializers_added, 1u);
  EXPECT_EQ(c.initializers_removed, 0u);
}

}  // namespace
}  // namespace octet
