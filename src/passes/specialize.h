// Specialization: fixes some symbolic dims of a graph's inputs to numbers, so that the
// optimizer can fold what depends on them (GPT-2's causal mask, every Shape of a
// [batch, seq, hidden] activation) for a deployment with a fixed batch or sequence length.
#pragma once

#include "ir/dim.h"
#include "ir/graph.h"

namespace octet {

// Replaces the bound symbols in the graph inputs' types by their values and re-infers
// every node. The graph then accepts only inputs of those sizes; run optimize() after to
// fold what became constant. Symbols not in `bindings` stay symbolic.
void bind_symbols(Graph& graph, const Bindings& bindings);

}  // namespace octet
