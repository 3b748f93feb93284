// The portable MatMulNBits prefill dequantization (NbitsDequantArgs in nbits_table.h): plain
// loops, also the tail the vector levels leave (a last block shorter than 32 past K).
#include <algorithm>

#include "kernels/cpu/simd/nbits_table.h"

namespace octet::cpu {

// Elements [j0, j1) of one block: shared with the vector levels for their tails.
void nbits_dequant_span(const uint8_t* q, int bits, float scale, float zero_scale, int64_t j0, int64_t j1,
                        float* dst) {
  const int mask = (1 << bits) - 1;
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t bit = j * bits;
    dst[j] = static_cast<float>((q[bit / 8] >> (bit % 8)) & mask) * scale - zero_scale;
  }
}

namespace {

void dequant_generic(const NbitsDequantArgs& g, int64_t n, float* dst) {
  const int64_t blob = g.block * g.bits / 8;
  for (int64_t kb = 0; kb < g.k_blocks; ++kb) {
    const int64_t cell = n * g.k_blocks + kb;
    nbits_dequant_span(g.b + cell * blob, g.bits, g.scales[cell], g.zero_scales[cell], 0,
                       std::min(g.block, g.K - kb * g.block), dst + kb * g.block);
  }
}

}  // namespace

void fill_nbits_dequant_generic(NbitsTable& t) { t.dequant = dequant_generic; }

}  // namespace octet::cpu
