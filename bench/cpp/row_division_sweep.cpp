// Exhaustive check of the QAttention row division by reciprocal (row_division_avx512.h)
// against the division, beyond what the unit tests can afford: for each divisor mantissa D
// in a range, every one of the 2^23 dividend mantissas X in [1, 2) (the scaling argument in
// the header covers all exponents the callers allow). Not a benchmark; prints the count of
// quotients that differ in any bit, which must be 0.
//   build/release/bench_row_division_sweep [first_mantissa [count]]   (default: all 2^23)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cpu/row_division.h"
#include "kernels/dispatch/cpu_features.h"

int main(int argc, char** argv) {
  if (octet::active_isa() != octet::IsaLevel::Avx512) {
    std::printf("no AVX-512\n");
    return 0;
  }
  const uint32_t first = argc > 1 ? static_cast<uint32_t>(std::strtoul(argv[1], nullptr, 0)) : 0;
  const uint32_t count = argc > 2 ? static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 0)) : (1u << 23) - first;
  const uint32_t n = 1u << 23;
  std::vector<float> x(n), q(n);
  for (uint32_t m = 0; m < n; ++m) {
    const uint32_t b = 0x3f800000u | m;
    std::memcpy(&x[m], &b, 4);
  }
  int64_t bad = 0;
  for (uint32_t k = first; k < first + count && k < n; ++k) {
    const uint32_t db = 0x3f800000u | k;
    float d;
    std::memcpy(&d, &db, 4);
    octet::cpu::divide_row_avx512(x.data(), n, d, 1.0f, q.data());
    for (uint32_t m = 0; m < n; ++m) {
      const float want = x[m] / d;
      if (std::memcmp(&want, &q[m], 4) != 0) {
        if (bad < 10) std::printf("mismatch: x %a d %a: %a, division %a\n", x[m], d, q[m], want);
        ++bad;
      }
    }
  }
  std::printf("D mantissas [%u, %u): %lld quotients differ\n", first, first + count, static_cast<long long>(bad));
  return bad != 0;
}
