// Output dims of ONNX MatMul (numpy matmul semantics) over symbolic dims, shared by every
// matmul-like rule (MatMul, MatMulInteger, QLinearMatMul, ...). Self-contained: it needs
// only ir/dim.h and reports problems as text, so that each caller words its own error.
//
// - A 1-D A is promoted to [1, K] and a 1-D B to [K, 1]; the added dim is removed again.
// - Batch dims (all but the last two) broadcast multidirectionally.
// - K must agree: two known sizes that differ are an error; a symbolic K is accepted
//   (checked against real sizes at run time).
#pragma once

#include <optional>
#include <string>

#include "ir/dim.h"

namespace octet {

// The product's dims, or nullopt with a reason in *error when A and B cannot multiply.
inline std::optional<DimVector> matmul_output_dims(const DimVector& a, const DimVector& b,
                                                   std::string* error = nullptr) {
  auto failed = [&](const std::string& why) -> std::optional<DimVector> {
    if (error) *error = why;
    return std::nullopt;
  };
  if (a.empty() || b.empty())
    return failed("matmul operands must have rank >= 1, got " + dims_to_string(a) + " and " +
                  dims_to_string(b));
  DimVector pa = a, pb = b;
  if (pa.size() == 1) pa.insert(pa.begin(), Dim(1));
  if (pb.size() == 1) pb.push_back(Dim(1));
  const Dim& ka = pa.back();
  const Dim& kb = pb[pb.size() - 2];
  auto ca = ka.constant(), cb = kb.constant();
  if (ca && cb && *ca != *cb)
    return failed("inner dimensions differ: " + dims_to_string(a) + " x " + dims_to_string(b) +
                  " (" + std::to_string(*ca) + " vs " + std::to_string(*cb) + ")");
  DimVector batch_a(pa.begin(), pa.end() - 2), batch_b(pb.begin(), pb.end() - 2);
  auto batch = broadcast_shapes(batch_a, batch_b);
  if (!batch)
    return failed("batch dimensions do not broadcast: " + dims_to_string(a) + " x " +
                  dims_to_string(b));
  DimVector out = *batch;
  if (a.size() > 1) out.push_back(pa[pa.size() - 2]);
  if (b.size() > 1) out.push_back(pb.back());
  return out;
}

}  // namespace octet
