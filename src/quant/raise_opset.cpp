#include "quant/raise_opset.h"

#include <set>

#include "ir/patch.h"
#include "octet/error.h"

namespace octet::quant {

std::vector<std::string> raise_opset_to_21(Graph& graph, const std::string& file, const std::string& why) {
  const int64_t from = graph.opset_version("");
  if (from >= 21) return {};
  if (from < 13) fail(file, ": opset ", from, " is too old to raise to 21 (", why, "); re-export with opset 13 or newer");
  static const std::set<std::string> kAxesToInput = {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                                     "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  graph.opset_imports[""] = 21;
  size_t moved = 0;
  if (from < 18) {
    GraphPatch patch(graph);
    for (Node* n : graph.nodes()) {
      if (!n->domain().empty() || !kAxesToInput.count(n->op_type()) || !n->has_attr("axes")) continue;
      const std::vector<int64_t> axes = n->attr_ints("axes");
      std::vector<Attribute> attrs;
      for (const Attribute& a : n->attributes())
        if (a.name != "axes") attrs.push_back(a);
      Value* axes_value = patch.add_initializer(n->name() + "_axes",
                                                Tensor::from_vector<int64_t>({static_cast<int64_t>(axes.size())}, axes));
      Node* r = patch.add_node(n->op_type(), {n->input(0), axes_value}, 1, attrs, "", n->name());
      patch.replace_uses(n->output(0), r->output(0));
      patch.remove_node(n);
      ++moved;
    }
    patch.apply();
  }
  std::vector<std::string> notes = {"ai.onnx opset raised from " + std::to_string(from) +
                                    " to 21 (" + why + ")"};
  if (moved) notes.push_back(std::to_string(moved) + " reductions' axes moved from attribute to input (opset 18)");
  return notes;
}

}  // namespace octet::quant
