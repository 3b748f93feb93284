// Inserting Casts during legalization: one Cast per (value, type) however many readers
// need it.
#pragma once

#include <map>
#include <utility>

#include "ir/graph.h"

namespace octet::legalize {

class CastBuilder {
 public:
  explicit CastBuilder(Graph& graph) : graph_(graph) {}

  // `v` as element type `to`: v itself when it already is, a cached earlier cast, else a
  // new Cast node (applied at once, typed by inference).
  Value* as_type(Value* v, DType to);
  // Makes `node` read `value` at input `slot` (an applied one-edit patch).
  void set_input(Node* node, size_t slot, Value* value);
  // Graph output `out`, now computed as another type, is cast back to `declared` under
  // its own name; its other readers keep reading the computed value.
  void restore_output_type(Value* out, DType declared);

 private:
  Graph& graph_;
  std::map<std::pair<const Value*, DType>, Value*> cache_;
};

// True for a node whose outputs inference may re-type: re-runs its rule and returns
// whether it succeeded (a failure leaves the types as they were).
bool reinfer(Node& node);

}  // namespace octet::legalize
