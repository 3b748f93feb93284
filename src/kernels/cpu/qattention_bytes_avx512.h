// Shared by the two AVX512-VNNI units of octet.QAttention (qattention_vnni_avx512.cpp, the
// task; qattention_pack_vnni_avx512.cpp, the packing of K and V): the byte forms of the
// quantized Q, K, V and the instructions' wrappers. Include only from units compiled with
// the AVX-512 and VNNI flags; everything stays in an anonymous namespace, so each unit
// keeps its own copy (see qattention_impl.h).
#pragma once

#include "kernels/cpu/qattention_avx512_traits.h"

namespace octet::cpu::qattn {
namespace {

// The first n of 16 lanes (none for n <= 0).
inline __mmask16 lanes(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1u);
}

// acc += the u8 x s8 (dpbusd) or s16 x s16 (dpwssd) pair sums of a and b. In asm because
// GCC 12, given the intrinsics on an array of accumulators, copies each accumulator to a
// fresh register around every instruction (tied operand) and spills: the tiles ran at half
// the instructions' throughput.
inline __m512i dpbusd(__m512i acc, __m512i a, __m512i b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}
inline __m512i dpwssd(__m512i acc, __m512i a, __m512i b) {
  asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}

inline __m512i bcast4(const void* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// n values of x quantized (q), shifted by -offset and stored as bytes in out[0, padded)
// (zeros past n); returns the sum of the n shifted values (with kSum; else 0). offset makes
// them fit a byte: lo for unsigned, lo + 128 for signed. NaN quantizes to 0 (the zero
// point) as quantize_one.
// Inlined: called per row, where a call's vzeroupper and the reduction's latency showed
// in short rows' profiles.
template <bool kByInverse, bool kSum>
__attribute__((always_inline)) inline int32_t quantize_bytes(const float* x, int64_t n, const Quant& q, int32_t offset,
                                                             int8_t* out, int64_t padded) {
  const Avx512Int::QuantVec qv(q);
  const __m512i off = _mm512_set1_epi32(offset);
  __m512i sum = _mm512_setzero_si512();
  for (int64_t i = 0; i < padded; i += 16) {
    const __mmask16 m = lanes(n - i);
    __m512 c = Avx512Int::quantize_vec<kByInverse>(_mm512_maskz_loadu_ps(m, x + i), qv);
    c = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(c, c, _CMP_ORD_Q), c);  // NaN -> 0
    const __m512i v = _mm512_maskz_sub_epi32(m, _mm512_cvtps_epi32(c), off);
    if constexpr (kSum) sum = _mm512_add_epi32(sum, v);
    _mm_mask_storeu_epi8(out + i, lanes(padded - i), _mm512_cvtepi32_epi8(v));
  }
  return kSum ? _mm512_reduce_add_epi32(sum) : 0;
}

template <bool kSum>
__attribute__((always_inline)) inline int32_t quantize_bytes(const float* x, int64_t n, const Quant& q,
                                                             int32_t offset, int8_t* out, int64_t padded) {
  return q.inv != 0.0f ? quantize_bytes<true, kSum>(x, n, q, offset, out, padded)
                       : quantize_bytes<false, kSum>(x, n, q, offset, out, padded);
}

// The byte-product constants of Args' Q and K quantizations.
struct ByteTerms {
  int32_t q_lo, ck, cv;  // qu = qc - q_lo; ks = kc - ck; vs = vc - cv
  explicit ByteTerms(const Args& p)
      : q_lo(static_cast<int32_t>(p.qq.lo)), ck(static_cast<int32_t>(p.kq.lo) + 128),
        cv(static_cast<int32_t>(p.vq.lo) + 128) {}
};

// Asks for the n floats at x ahead of use: K, V and Q rows lie a whole packed Q|K|V row
// apart (4.5 KiB for 384 channels each), past what the hardware prefetchers follow, and
// the quantize loops otherwise wait on each row's loads.
inline void prefetch(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) _mm_prefetch(reinterpret_cast<const char*>(x + i), _MM_HINT_T0);
}
constexpr int64_t kAhead = 4;  // rows prefetched ahead

}  // namespace
}  // namespace octet::cpu::qattn
