// The portable MatMulNBits dot products (nbits_table.h): plain loops over the same layout
// the vector levels read, so every level is tested against the same reference kernel.
#include "kernels/cpu/simd/nbits_table.h"

namespace octet::cpu {
namespace {

void gemv_generic(const NbitsGemvArgs& g, int64_t n0, int64_t n1) {
  const int64_t kp = g.k_blocks * g.block, blob = g.block * g.bits / 8;
  for (int64_t n = n0; n < n1; ++n) {
    float acc[kNbitsMaxRows] = {};
    for (int64_t b = 0; b < g.k_blocks; ++b) {
      const uint8_t* q = g.b + (n * g.k_blocks + b) * blob;
      const float s = g.scales[n * g.k_blocks + b], z = g.zeros[n * g.k_blocks + b];
      for (int64_t r = 0; r < g.rows; ++r) {
        const float* a = g.a + r * kp + b * g.block;
        float dot = 0.0f;
        if (g.bits == 8) {
          for (int64_t j = 0; j < g.block; ++j) dot += (static_cast<float>(q[j]) - z) * a[j];
        } else {
          for (int64_t c = 0; c < g.block; c += 32)  // 16 bytes: evens then odds in a
            for (int j = 0; j < 16; ++j) {
              const uint8_t byte = q[c / 2 + j];
              dot += (static_cast<float>(byte & 15) - z) * a[c + j] + (static_cast<float>(byte >> 4) - z) * a[c + 16 + j];
            }
        }
        acc[r] += s * dot;
      }
    }
    for (int64_t r = 0; r < g.rows; ++r) g.y[r * g.ldy + n] = acc[r];
  }
}

}  // namespace

void fill_nbits_table_generic(NbitsTable& t) {
  t.name = "generic";
  t.gemv = gemv_generic;
}

}  // namespace octet::cpu
