// Synthetic inputs for running a model without data (`octet run --random`), chosen so a
// transformer gets inputs it could see in practice rather than garbage:
//
//   - inputs named like a mask (`*mask*`, any numeric or bool type): all ones / true
//   - integer inputs named `*token_type*` or `*segment*`: zeros (one segment)
//   - integer inputs named `*position_ids*`: 0, 1, 2, ... along the last axis
//   - integer inputs used as Gather indices (directly, or through Cast, Reshape,
//     Unsqueeze, Squeeze, Flatten, Identity, Expand, Transpose, Slice, Tile, Concat):
//     uniform in [0, n) where n is the size of the gathered axis (the vocabulary), the
//     smallest one if several Gathers read them; zeros when no n is known
//   - other integer inputs: ones; bool inputs: true
//   - float inputs (float16/bfloat16/float32/float64), masks excepted: N(0, 1)
//
// Every draw comes from one seeded generator, so a seed reproduces the inputs exactly.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"

namespace octet {

struct InputFill {
  enum class Rule { Normal, Indices, Ones, Zeros, Positions };
  Rule rule = Rule::Normal;
  int64_t limit = 0;  // Indices: values in [0, limit); Positions: wrap at limit (0: none)
  // Which rule fired, in words, for the report ("ids in [0, 1000) (Gather 'embed')").
  std::string description;
};

// Picks the rule for graph input `input`. Gather sizes that depend on symbols are
// evaluated under `bindings`.
InputFill choose_input_fill(const Value& input, const Bindings& bindings);

// The input's concrete shape under `bindings`. An unknown rank or an unbound symbol is an
// error naming the input and the symbol and suggesting --dim.
std::vector<int64_t> concrete_input_shape(const Value& input, const Bindings& bindings);

Tensor make_input(DType dtype, const std::vector<int64_t>& shape, const InputFill& fill,
                  std::mt19937_64& rng);

}  // namespace octet
