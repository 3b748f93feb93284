// `octet legalize`: rewrites a model whose types the target cannot run into one it can,
// computing the same thing (src/check finds the problems this fixes).
//
// Rewrites, in order (one file each in this folder):
//   1. resolve_type_mixes      inputs of one ONNX type variable with different types get
//                              the fewest Casts: floats meet at the widest of them (or
//                              --compute-dtype), integers meeting floats are cast to the
//                              float, int32 accumulators of MatMulInteger/ConvInteger are
//                              cast and multiplied by their input scales
//   2. unpack_packed_weights   GPTQ/AWQ QuantLinear weights (int32-packed 4-bit qweight,
//                              qzeros, fp16 scales, g_idx) computed in the graph become
//                              standard int4 weights: blocked DequantizeLinear (octet,
//                              tensorrt) or com.microsoft MatMulNBits (ort)
//   3. lift_compute_dtype      nodes computing in float16/bfloat16 that the target has no
//                              kernel for (or every one, --compute-dtype fp32) compute in
//                              float32, as whole regions with Casts only at the borders
//   4. cancel_casts            Cast pairs that round-trip exactly, and same-type Casts, go
// Graph inputs and outputs keep their element types: outputs are cast back at the end.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/target_kernels.h"
#include "ops/infer.h"

namespace octet::legalize {

using check::Target;

enum class ComputeDType { Keep, Float32, Float16 };
ComputeDType parse_compute_dtype(const std::string& s);  // "fp32" | "fp16" | "keep"
const char* compute_dtype_name(ComputeDType c);

struct LegalizeOptions {
  Target target = Target::Octet;
  ComputeDType compute = ComputeDType::Keep;
};

// What one rewrite did: a count and one line per change worth telling.
struct RewriteLog {
  std::string name;
  size_t count = 0;
  std::vector<std::string> details;
  void note(std::string line) {
    ++count;
    details.push_back(std::move(line));
  }
};

struct LegalizeReport {
  std::vector<RewriteLog> rewrites;
  std::vector<std::string> unresolved;  // problems no rewrite could fix, one line each
  size_t nodes_before = 0, nodes_after = 0;
  nlohmann::json to_json() const;
  std::string to_text() const;
};

// Rewrites `graph` in place. `declared` are the types the file stored (the graph is
// typed tolerantly from them first). Throws only for internal errors; what cannot be
// fixed is listed in `unresolved`.
LegalizeReport legalize(Graph& graph, const DeclaredTypes& declared, const LegalizeOptions& options);

}  // namespace octet::legalize
