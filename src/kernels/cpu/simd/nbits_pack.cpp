// Repacking MatMulNBits' weights into 16-column panels (nbits_packed.h), once per session.
// Portable code: it runs at session creation, not per token.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/simd/nbits_packed.h"
#include "kernels/cpu/weight_pages.h"

namespace octet::cpu {

NbitsPacked pack_nbits(int bits, int64_t N, int64_t k_blocks, int64_t block, const uint8_t* b, const float* scales,
                       const uint8_t* zeros) {
  NbitsPacked p;
  p.bits = bits, p.N = N, p.k_blocks = k_blocks, p.block = block;
  p.panels = (N + kNbitsPanel - 1) / kNbitsPanel;
  const int64_t count = N * k_blocks;
  p.uniform_zero = std::all_of(zeros, zeros + count, [&](uint8_t z) { return z == zeros[0]; });
  p.zero = zeros[0];
  const int64_t blob = block * bits / 8;  // a block of one column, in the file and packed
  p.codes_bytes = blob * kNbitsPanel;     // a multiple of 64: block is a multiple of 32
  p.block_bytes = p.codes_bytes + kNbitsPanel * 4 + (p.uniform_zero ? 0 : kNbitsPanel * 4);
  const int64_t bytes = p.panels * k_blocks * p.block_bytes;
  // In 2 MiB pages (weight_pages.h: SmolLM2's int8 GEMVs 5.1 -> 4.1 ms a step against 4 KiB
  // pages); zero-filled: padding columns add 0.
  p.stream = Tensor(DType::UInt8, {bytes}, weight_pages(static_cast<size_t>(bytes)));
  uint8_t* out = p.stream.mutable_raw();
  for (int64_t pi = 0; pi < p.panels; ++pi)
    for (int64_t kb = 0; kb < k_blocks; ++kb) {
      uint8_t* dst = out + (pi * k_blocks + kb) * p.block_bytes;
      float* ps = reinterpret_cast<float*>(dst + p.codes_bytes);
      int32_t* pz = reinterpret_cast<int32_t*>(dst + p.codes_bytes + kNbitsPanel * 4);
      for (int64_t c = 0; c < kNbitsPanel; ++c) {
        const int64_t n = pi * kNbitsPanel + c;
        if (n >= N) continue;  // codes 0, scale 0 (and zero 0)
        const uint8_t* src = b + (n * k_blocks + kb) * blob;
        ps[c] = scales[n * k_blocks + kb];
        if (!p.uniform_zero) {
          const int32_t z = zeros[n * k_blocks + kb];
          pz[c] = z | (z * 128) << 16;  // the int16 pair (z, 128 z)
        }
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
