// The AVX512-VNNI task's packing of one head (qattention_vnni_avx512.cpp describes the byte
// forms): K quantized to signed bytes and transposed into quads of channels with each key's
// constant term, V quantized to signed bytes with the keys in quads. Once per (batch, head)
// and thread; the tasks of a head reuse it.
#pragma GCC target("avx512vnni")

#include "kernels/cpu/qattention_bytes_avx512.h"
#include "kernels/cpu/simd/transpose16_avx512.h"

namespace octet::cpu::qattn {
namespace {

// Four byte rows a, a + n, a + 2n, a + 3n (n a multiple of 16) interleaved:
// out[4 d + e] = row e's byte d.
void interleave4(const int8_t* a, int64_t n, int8_t* out) {
  for (int64_t d = 0; d < n; d += 16) {
    auto load = [&](int64_t e) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + e * n + d)); };
    const __m128i r0 = load(0), r1 = load(1), r2 = load(2), r3 = load(3);
    const __m128i lo01 = _mm_unpacklo_epi8(r0, r1), hi01 = _mm_unpackhi_epi8(r0, r1);
    const __m128i lo23 = _mm_unpacklo_epi8(r2, r3), hi23 = _mm_unpackhi_epi8(r2, r3);
    __m128i* o = reinterpret_cast<__m128i*>(out + 4 * d);
    _mm_storeu_si128(o, _mm_unpacklo_epi16(lo01, lo23));
    _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(lo01, lo23));
    _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(hi01, hi23));
    _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(hi01, hi23));
  }
}

}  // namespace

// K and V of head (b, h) into w: ks bytes transposed into quads (kt8) with each key's
// constant term (kcol), vs bytes with the keys in quads (vt8).
void pack_head_vnni(const Args& p, int64_t b, int64_t h, Scratch& w) {
  if (w.packed == b * p.heads + h) return;
  w.packed = b * p.heads + h;
  const ByteTerms t(p);
  // Wraps modulo 2^32 like the lanes; the full sum fits int32 (see the file comment).
  const uint32_t constant =
      static_cast<uint32_t>(p.head_k) * static_cast<uint32_t>(t.q_lo) * static_cast<uint32_t>(t.ck);
  const int64_t dk64 = p.dk64;
  const float* k = p.k + b * p.k_b + h * p.head_k;
  // Only a row's first dk4 bytes reach kt8 (the transpose keeps quads below dk4 / 4), so
  // only they are quantized (zeros from head_k); the rest of the 64-byte row is zeroed
  // with plain stores, never quantized: with 32-channel heads (MiniLM) a quantized row of
  // dk64 = 64 was half padding, twice the vector work of the row's 32 values.
  for (int64_t j = 0; j < p.skp; ++j) {
    int8_t* dst = w.k8 + j * dk64;
    int64_t d = 0;
    if (j < p.kv_len) {
      if (j + kAhead < p.kv_len) prefetch(k + (j + kAhead) * p.k_s, p.head_k);
      quantize_bytes<false>(k + j * p.k_s, p.head_k, p.kq, t.ck, dst, p.dk4);
      d = p.dk4;
    }
    for (; d < dk64 && d % 16 != 0; ++d) dst[d] = 0;
    for (; d < dk64; d += 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + d), _mm_setzero_si128());
  }
  // [skp][dk64 / 4] quads -> [dk4 / 4][skp] quads, in 16 x 16 blocks; each key's sum of ks
  // on the way (ones . quads, 16 keys per VPDPBUSD), for kcol.
  const __m512i ones = _mm512_set1_epi8(1);
  for (int64_t j0 = 0; j0 < p.skp; j0 += 16) {
    __m512i sums = _mm512_setzero_si512();
    for (int64_t c0 = 0; c0 < p.dk4 / 4; c0 += 16) {
      __m512i r[16];
      for (int a = 0; a < 16; ++a) r[a] = _mm512_loadu_si512(w.k8 + (j0 + a) * dk64 + 4 * c0);
      transpose16x16_epi32(r);
      for (int64_t c = 0; c < 16 && c0 + c < p.dk4 / 4; ++c) {
        _mm512_storeu_si512(w.kt8 + 4 * ((c0 + c) * p.skp + j0), r[c]);
        sums = dpbusd(sums, ones, r[c]);
      }
    }
    _mm512_storeu_si512(w.kcol + j0, _mm512_add_epi32(_mm512_mullo_epi32(sums, _mm512_set1_epi32(t.q_lo)),
                                                      _mm512_set1_epi32(static_cast<int32_t>(constant))));
  }
  // Keys past Sk are zero bytes (their P is 0 too), and so are the quads from sk4 to skq,
  // which only the AMX P.V reads: its P bytes there are stale, and zero V keeps them out.
  const float* v = p.v + b * p.v_b + h * p.head_v;
  __builtin_memset(w.vt8 + p.sk4 * p.dvp, 0, (p.skq - p.sk4) * p.dvp);
  for (int64_t g = 0; g < p.sk4 / 4; ++g) {
    for (int64_t e = 0; e < 4; ++e) {
      const int64_t j = 4 * g + e;
      int8_t* dst = w.v8 + e * p.dvp;
      if (j + kAhead < p.kv_len) prefetch(v + (j + kAhead) * p.v_s, p.head_v);
      if (j < p.kv_len) quantize_bytes<false>(v + j * p.v_s, p.head_v, p.vq, t.cv, dst, p.dvp);
      else for (int64_t d = 0; d < p.dvp; ++d) dst[d] = 0;
    }
    interleave4(w.v8, p.dvp, w.vt8 + 4 * g * p.dvp);
  }
}

}  // namespace octet::cpu::qattn
