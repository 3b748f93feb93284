// Multiply-accumulate counts per node, as symbolic dims: evaluated once the user binds
// the model's symbols (--dim seq=128), printed as a formula otherwise. MACs drive the
// cost picture in `octet inspect` and, later, quantization coverage (share of MACs in int8).
#pragma once

#include <optional>

#include "ir/graph.h"

namespace octet {

// MACs of one node: matrix products (MatMul, Gemm, Einsum, the integer and quantized
// matmuls, MatMulNBits, octet.MatMulBias) and convolutions. nullopt for ops with no multiply-accumulate
// core, or when the shapes needed are unknown.
std::optional<Dim> node_macs(const Node& node);
// macs.evaluate(bindings), nullopt also when the count overflows int64.
std::optional<int64_t> evaluate_macs(const Dim& macs, const Bindings& bindings);

}  // namespace octet
