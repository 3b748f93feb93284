#include "ops/transpose_layout.h"

namespace octet {

std::optional<std::vector<int64_t>> transpose_permutation(const Node& node, int64_t rank) {
  std::vector<int64_t> perm;
  if (const Attribute* a = node.find_attr("perm")) {
    if (a->kind != Attribute::Kind::Ints) return std::nullopt;
    perm = a->ints;
  } else {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int64_t>(perm.size()) != rank) return std::nullopt;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)]) return std::nullopt;
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

bool moves_only_unit_axes(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm) {
  int64_t last = -1;
  for (int64_t p : perm) {
    if (shape[static_cast<size_t>(p)] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

}  // namespace octet
