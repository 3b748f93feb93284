// The one place each ISA's MatMulNBits GEMV picks its instantiation: rows of A (1..4, a
// compile-time count so the accumulators live in registers) and bits (4 or 8). Included by
// the per-ISA translation units only, with their own Kernel (internal linkage there).
#pragma once

#include "kernels/cpu/simd/nbits_table.h"

namespace octet::cpu::simd {

// Kernel<R, Bits>::run(args, n0, n1).
template <template <int, int> class Kernel>
void nbits_dispatch(const NbitsGemvArgs& g, int64_t n0, int64_t n1) {
  static_assert(kNbitsMaxRows == 4, "one case per row count");
  if (g.bits == 4) {
    switch (g.rows) {
      case 1: return Kernel<1, 4>::run(g, n0, n1);
      case 2: return Kernel<2, 4>::run(g, n0, n1);
      case 3: return Kernel<3, 4>::run(g, n0, n1);
      default: return Kernel<4, 4>::run(g, n0, n1);
    }
  }
  switch (g.rows) {
    case 1: return Kernel<1, 8>::run(g, n0, n1);
    case 2: return Kernel<2, 8>::run(g, n0, n1);
    case 3: return Kernel<3, 8>::run(g, n0, n1);
    default: return Kernel<4, 8>::run(g, n0, n1);
  }
}

}  // namespace octet::cpu::simd
