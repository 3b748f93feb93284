// divide_row_avx512 (row_division.h): RowDivisor over a row, for the tests. Compiled with
// the AVX-512 flags (CMakeLists.txt, by the file-name suffix).
#include "kernels/cpu/row_division.h"

#include "kernels/cpu/row_division_avx512.h"

namespace octet::cpu {

bool divide_row_avx512(const float* x, int64_t n, float d, float scale, float* q) {
  const RowDivisor divisor(d, reciprocal_division_scale_ok(scale));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(q + i, m, divisor.divide(_mm512_maskz_loadu_ps(m, x + i)));
  }
  return divisor.uses_reciprocal();
}

}  // namespace octet::cpu
