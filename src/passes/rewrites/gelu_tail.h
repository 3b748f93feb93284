// The end both GeLU forms share: 0.5 * x * (1 + f(x)), f = erf(x/sqrt2) or
// tanh(sqrt(2/pi) * (x + 0.044715 x^3)), in the orders exporters write it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/pass.h"

namespace octet::passes {

struct GeluMatch {
  Value* x = nullptr;
  Value* out = nullptr;       // the value the fused Gelu replaces
  std::vector<Node*> nodes;   // every node the fusion removes
};

// Given f(x) = the Erf/Tanh output, matches Add(f, 1) (or a two-input Sum) and one of
//   Mul(Mul(x, 0.5), one_plus)   HF BERT/GPT-2: x * 0.5 * (1 + f)
//   Mul(Mul(x, one_plus), 0.5)   torch.nn.GELU: x * (1 + f) * 0.5
//   Mul(x, Mul(one_plus, 0.5))   x * (0.5 * (1 + f))
// with either operand order in each Mul and Add. `m.nodes` gets the tail's nodes added.
bool match_gelu_tail(Value* f, GeluMatch& m);

// Replaces the match with one octet.Gelu(x, approximate) node; false when the graph
// rejected the patch.
bool apply_gelu(Graph& g, PassContext& ctx, const GeluMatch& m, const std::string& approximate);

}  // namespace octet::passes
