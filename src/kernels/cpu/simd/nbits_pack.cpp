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

namespace {

// What every reader of the panel layout needs per panel and block: where the codes and
// scales are, and column c's zero point.
struct PanelBlock {
  const uint8_t* codes;
  const float* scales;
  const int32_t* zeros;  // null when uniform
  int32_t zero(const NbitsPacked& w, int64_t c) const { return zeros ? zeros[c] & 0xffff : w.zero; }
};

PanelBlock panel_block(const NbitsPacked& w, int64_t panel, int64_t kb) {
  const uint8_t* p = w.stream.raw() + (panel * w.k_blocks + kb) * w.block_bytes;
  return {p, reinterpret_cast<const float*>(p + w.codes_bytes),
          w.uniform_zero ? nullptr : reinterpret_cast<const int32_t*>(p + w.codes_bytes + kNbitsPanel * 4)};
}

// Column c's code of k (counted inside the block), from the layout in nbits_packed.h.
int packed_code(const NbitsPacked& w, const uint8_t* codes, int64_t c, int64_t k) {
  if (w.bits == 8) return codes[((k / 4) * kNbitsPanel + c) * 4 + k % 4];
  const uint8_t byte = codes[((k / 8) * kNbitsPanel + c) * 4 + k % 4];
  return k % 8 < 4 ? byte & 0x0f : byte >> 4;
}

}  // namespace

void dequant_packed_panel_generic(const NbitsPacked& w, int64_t panel, int64_t K, float* dst, int64_t ldd) {
  for (int64_t kb = 0; kb < w.k_blocks; ++kb) {
    const PanelBlock b = panel_block(w, panel, kb);
    const int64_t len = std::min(w.block, K - kb * w.block);
    for (int64_t c = 0; c < kNbitsPanel; ++c) {
      const float scale = b.scales[c], zero_scale = static_cast<float>(b.zero(w, c)) * scale;
      for (int64_t k = 0; k < len; ++k)
        dst[(kb * w.block + k) * ldd + c] = static_cast<float>(packed_code(w, b.codes, c, k)) * scale - zero_scale;
    }
  }
}

NbitsUnpacked unpack_nbits(const NbitsPacked& w) {
  const int64_t blob = w.block * w.bits / 8, count = w.N * w.k_blocks;
  NbitsUnpacked u;
  u.b.assign(static_cast<size_t>(count * blob), 0);
  u.scales.resize(static_cast<size_t>(count));
  u.zeros.resize(static_cast<size_t>(count));
  for (int64_t n = 0; n < w.N; ++n)
    for (int64_t kb = 0; kb < w.k_blocks; ++kb) {
      const PanelBlock b = panel_block(w, n / kNbitsPanel, kb);
      const int64_t c = n % kNbitsPanel, cell = n * w.k_blocks + kb;
      u.scales[cell] = b.scales[c];
      u.zeros[cell] = static_cast<uint8_t>(b.zero(w, c));
      uint8_t* dst = u.b.data() + cell * blob;
      for (int64_t k = 0; k < w.block; ++k)
        dst[k * w.bits / 8] |= static_cast<uint8_t>(packed_code(w, b.codes, c, k) << (w.bits == 4 ? 4 * (k & 1) : 0));
    }
  return u;
}

}  // namespace octet::cpu
