// What fuse_attention_slices, fuse_attention_qkv and fuse_qattention_qkv share: an
// octet.Attention or octet.QAttention rewritten to read Q, K and V out of packed tensors
// through its channel_ranges attribute (ops/octet_attention.cpp), and the two halves of a
// Q/K/V projection merge around building the packed product.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "ir/patch.h"
#include "passes/pass.h"
#include "passes/pattern.h"

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

// Three [K, N_i] weights of one dtype side by side, [K, N_q + N_k + N_v]; offset[i] is the
// column where weight i starts, offset[3] the total. nullopt when their K or dtype differ.
inline std::optional<Tensor> columns_side_by_side(const std::array<const Tensor*, 3>& w,
                                                  std::array<int64_t, 4>& offset) {
  const int64_t k = w[0]->shape()[0];
  for (const Tensor* t : w)
    if (t->rank() != 2 || t->shape()[0] != k || t->dtype() != w[0]->dtype()) return std::nullopt;
  offset = {0, 0, 0, 0};
  for (int i = 0; i < 3; ++i) offset[i + 1] = offset[i] + w[i]->shape()[1];
  Tensor out(w[0]->dtype(), {k, offset[3]});
  const size_t element = dtype_storage_bytes(out.dtype(), 1);
  for (int i = 0; i < 3; ++i) {
    const size_t row = static_cast<size_t>(w[i]->shape()[1]) * element;
    for (int64_t r = 0; r < k; ++r)
      std::memcpy(out.mutable_raw() + (static_cast<size_t>(r * offset[3] + offset[i])) * element,
                  w[i]->raw() + static_cast<size_t>(r) * row, row);
  }
  return out;
}

// Finishes a Q/K/V merge staged in `patch`: `attention` reads Q, K and V out of the packed
// product `qkv` (columns split at `offset`), the three projections go, and the patch is
// applied and counted under `what`. False when the patch could not be applied.
inline bool finish_qkv_merge(GraphPatch& patch, PassContext& ctx, Node* attention,
                             const std::array<Node*, 3>& projections, Value* qkv,
                             const std::array<int64_t, 4>& offset, const char* what, RemovedNodes& removed) {
  read_qkv_through_ranges(patch, attention, {qkv, qkv, qkv},
                          {offset[0], offset[1], offset[1], offset[2], offset[2], offset[3]});
  for (Node* p : projections) patch.remove_node(p);
  if (!ctx.apply(patch)) return false;
  removed.add({attention, projections[0], projections[1], projections[2]});
  ctx.count(what);
  return true;
}

}  // namespace octet::passes
