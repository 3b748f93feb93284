// Repacking MatMulNBits' weights into 16-column panels (nbits_packed.h), once per session.
// Portable code: it runs at session creation, not per token.
#include <cstring>

#include "kernels/cpu/simd/nbits_packed.h"

namespace octet::cpu {

NbitsPacked pack_nbits(int bits, int64_t N, int64_t k_blocks, int64_t block, const uint8_t* b, const float* scales,
                       const uint8_t* zeros) {
  NbitsPacked p;
  p.bits = bits, p.N = N, p.k_blocks = k_blocks, p.block = block;
  p.panels = (N + kNbitsPanel - 1) / kNbitsPanel;
  const int64_t blob = block * bits / 8;                // a block of one column, in the file and packed
  const int64_t panel_block = blob * kNbitsPanel;       // a block of one panel, packed
  p.b = Tensor(DType::UInt8, {p.panels * k_blocks * panel_block});
  p.scales = Tensor(DType::Float32, {p.panels, k_blocks, kNbitsPanel});
  p.zeros = Tensor(DType::Int32, {p.panels, k_blocks, kNbitsPanel});
  uint8_t* out = p.b.mutable_raw();
  float* ps = p.scales.mutable_data<float>();
  int32_t* pz = p.zeros.mutable_data<int32_t>();
  std::memset(out, 0, static_cast<size_t>(p.b.numel()));  // padding columns: codes 0
  for (int64_t pi = 0; pi < p.panels; ++pi)
    for (int64_t kb = 0; kb < k_blocks; ++kb) {
      uint8_t* dst = out + (pi * k_blocks + kb) * panel_block;
      for (int64_t c = 0; c < kNbitsPanel; ++c) {
        const int64_t n = pi * kNbitsPanel + c, at = (pi * k_blocks + kb) * kNbitsPanel + c;
        if (n >= N) {
          ps[at] = 0.0f, pz[at] = 0;
          continue;
        }
        const uint8_t* src = b + (n * k_blocks + kb) * blob;
        ps[at] = scales[n * k_blocks + kb];
        const int32_t z = zeros[n * k_blocks + kb];
        pz[at] = z | (z * 128) << 16;  // the int16 pair (z, 128 z)
        if (bits == 8) {
          for (int64_t g = 0; g < block / 4; ++g)
            for (int64_t j = 0; j < 4; ++j) dst[(g * kNbitsPanel + c) * 4 + j] = src[4 * g + j];
          continue;
        }
        auto code = [&](int64_t k) { return (src[k / 2] >> (4 * (k & 1))) & 0x0f; };
        for (int64_t g = 0; g < block / 8; ++g)
          for (int64_t j = 0; j < 4; ++j)
            dst[(g * kNbitsPanel + c) * 4 + j] = static_cast<uint8_t>(code(8 * g + j) | code(8 * g + 4 + j) << 4);
      }
    }
  return p;
}

}  // namespace octet::cpu
