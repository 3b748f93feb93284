// The AVX512-VNNI instantiation of the octet.QAttention task: the AVX-512 traits with
// madd_add as one VPDPWSSD (int16 pairs multiplied, summed and added to the int32
// accumulator in one instruction) instead of VPMADDWD + VPADDD. Same integers: the
// centered terms are within [-255, 255], so a pair sums to at most 130050 and VPDPWSSD's
// non-saturating add equals the two-step form exactly; the float steps are unchanged.
// qattention.cpp picks this unit at the AVX-512 level where CPUID reports AVX512-VNNI
// (and tests have not turned it off, see qattn::set_vnni_allowed).
#pragma GCC target("avx512vnni")

#include "kernels/cpu/qattention_avx512_traits.h"

namespace octet::cpu::qattn {
namespace {

struct Avx512VnniInt : Avx512Int {
  static I madd_add(I acc, P a, P b) { return _mm512_dpwssd_epi32(acc, a, b); }
};

}  // namespace

void task_avx512_vnni(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Scratch& w) {
  Kernel<Avx512VnniInt>::task(p, b, h, i0, i1, w);
}

}  // namespace octet::cpu::qattn
