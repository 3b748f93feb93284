// Subgraphs (If branches, Loop/Scan bodies) as models of their own.
//
// The importer keeps a node's graph attributes verbatim (Attribute::opaque_proto) and
// records the outer-scope values they read as the node's implicit inputs. A control-flow
// kernel runs a subgraph through its own Session: load_subgraph turns the stored
// GraphProto into a Model whose graph inputs are the outer values it reads.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnx/model_io.h"

namespace onnx {
class GraphProto;
}

namespace octet {

// Names `g` reads but does not define (an enclosing scope must), in first-use order;
// nested subgraphs included.
std::vector<std::string> free_names(const onnx::GraphProto& g);

// The graph held by attribute `attr` of `node` as a Model. Each outer value it reads is an
// initializer of the subgraph when the outer value is a constant (so the subgraph's
// kernels can prepack and fold it; a large one shares the outer tensor's data, a small one
// is copied), and a graph input of the outer value's type otherwise. Errors name the node
// and the attribute.
Model load_subgraph(const Node& node, const std::string& attr);

}  // namespace octet
