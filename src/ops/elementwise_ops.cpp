// Elementwise ops: the family's rules live in elementwise_unary.cpp (activations, math
// functions, Identity/Dropout, Cast/CastLike, Clip) and elementwise_binary.cpp
// (broadcasting arithmetic, comparisons, logic, Min/Max/Sum/Mean, Where, PRelu).
#include "ops/math_helpers.h"
#include "ops/op_families.h"

namespace octet {
void register_elementwise_ops(OpRegistry& r) {
  math::register_unary_ops(r);
  math::register_binary_ops(r);
}
}  // namespace octet
