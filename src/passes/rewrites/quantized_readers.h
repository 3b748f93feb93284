// Who reads a float value as the A of a static octet.QMatMul: shared by the rewrites that
// let the value's producer write it quantized (fuse_layer_norm_quantize.cpp,
// fuse_qmatmul_output_quantize.cpp), so the readers skip their own quantization pass.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace octet::passes {

inline Value* input_or_null(const Node* n, size_t i) { return i < n->inputs().size() ? n->input(i) : nullptr; }

// The same numbers: one value, both absent, or constants of one type, shape and bytes.
bool same_numbers(const Value* x, const Value* y);

struct QuantizedReaders {
  std::vector<Node*> qmatmuls;  // distinct static QMatMuls reading the value as A only
  bool others = false;          // something else reads it too (or the QMatMuls disagree)
  bool dead = false;            // a reader nothing reads (a QuantizeLinear a fusion left)
};

// The readers of `y`. A QMatMul counts when it is static (a_scale a float32 scalar
// constant, a_zero_point absent or a uint8/int8 scalar constant), reads `y` at input 0
// and nowhere else, and has no a_channel_scale unless `channel_scale_ok`; all of them
// must share a_scale, a_zero_point and a_channel_scale (else none counts).
QuantizedReaders quantized_readers(const Value* y, bool channel_scale_ok);

// The per-token readers of `y`: dynamic QMatMuls (no a_scale, a_zero_point or
// a_channel_scale) reading `y` at input 0 and nowhere else, all of one dynamic_type
// (else none counts).
QuantizedReaders per_token_readers(const Value* y);

}  // namespace octet::passes
