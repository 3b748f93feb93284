// The legalization rewrites, one per file; legalize.cpp runs them in order.
#pragma once

#include "legalize/legalize.h"

namespace octet::legalize {

void resolve_type_mixes(Graph& graph, const LegalizeOptions& options, RewriteLog& log,
                        std::vector<std::string>& unresolved);
void unpack_packed_weights(Graph& graph, const LegalizeOptions& options, RewriteLog& log);
void lift_compute_dtype(Graph& graph, const LegalizeOptions& options, RewriteLog& log);
void cancel_casts(Graph& graph, RewriteLog& log);

// The float type two or more float types meet at: the wider, and float32 where neither
// holds the other (float16 and bfloat16).
DType common_float_type(DType a, DType b);

}  // namespace octet::legalize
