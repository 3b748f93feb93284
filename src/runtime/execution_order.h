// The order a Session runs a graph's nodes in: the graph's own (topological) order, except
// that a node computed from constants alone -- a weight's DequantizeLinear, a Transpose of
// a constant -- runs just before the first node that reads it, not where the file put it.
//
// Why: such a node is ready from the start, and graph order may put it far ahead of its
// reader (a quantizer appends its weight DequantizeLinears, a topological sort then takes
// them whenever nothing else is ready). Its output then lives from there to the reader, and
// the memory plan holds every such weight at once: the quantized SmolLM2-135M run as
// written (octet quantize's layer SQNR) had 540 MB of dequantized weights alive together
// instead of one layer's. Nodes that read any graph input or computed value keep their
// relative order.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace octet {

std::vector<const Node*> execution_order(const Graph& graph);

}  // namespace octet
