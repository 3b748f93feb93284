// Transpose's permutation and when a Transpose is only a reshape, shared by the reference
// and optimized kernels, the graph rewrite that turns such a Transpose into a Reshape
// (passes/rewrites/transpose_to_reshape.cpp) and the run loop that makes its output a view
// (runtime/session_run.cpp), so all three read `perm` and decide "a reshape" alike.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace octet {

// The Transpose's permutation of `rank` dims: its perm attribute, by default the dims
// reversed. nullopt when perm is not ints or not a permutation of 0 .. rank-1.
std::optional<std::vector<int64_t>> transpose_permutation(const Node& node, int64_t rank);

// True when the axes whose size is not 1 keep their order under `perm`: every element
// stays where it is, and the Transpose is a reshape. A negative size (unknown) counts as
// not 1.
bool moves_only_unit_axes(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm);

}  // namespace octet
