// The row division of the QAttention tasks' epilogue (row_division_avx512.h) as a plain
// function, so that tests can compare it with the division on any values.
#pragma once

#include <cstdint>

namespace octet::cpu {

// q[i] = x[i] / d, i < n, the way RowDivisor does it (by reciprocal where the conditions
// hold for d and for an x scale of `scale`, else the division); returns whether it took the
// reciprocal. AVX-512 only: call it where active_isa() is Avx512.
bool divide_row_avx512(const float* x, int64_t n, float d, float scale, float* q);

}  // namespace octet::cpu
