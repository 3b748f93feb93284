// What fuse_attention_slices and fuse_attention_qkv share: an octet.Attention or
// octet.QAttention rewritten to read Q, K and V out of packed tensors through its
// channel_ranges attribute (ops/octet_attention.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "ir/patch.h"

namespace octet::passes {

// Stages in `patch` a copy of `attention` (same op, attributes, mask and other inputs)
// whose Q, K and V are `sources` read through `ranges` ([qb, qe, kb, ke, vb, ve]), moves
// the original's readers to it and removes the original.
inline void read_qkv_through_ranges(GraphPatch& patch, Node* attention, const std::array<Value*, 3>& sources,
                                    std::vector<int64_t> ranges) {
  std::vector<Attribute> attrs = attention->attributes();
  attrs.push_back(Attribute::make_ints("channel_ranges", std::move(ranges)));
  std::vector<Value*> inputs = attention->inputs();
  for (size_t i = 0; i < 3; ++i) inputs[i] = sources[i];
  Node* fused = patch.add_node(attention->op_type(), inputs, 1, std::move(attrs), "octet", attention->name());
  patch.replace_uses(attention->output(0), fused->output(0));
  patch.remove_node(attention);
}

}  // namespace octet::passes
