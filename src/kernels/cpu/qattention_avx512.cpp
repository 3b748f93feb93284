// The AVX-512 (F, BW) instantiation of the octet.QAttention task (qattention_impl.h) with
// the traits of qattention_avx512_traits.h. Compiled with the AVX-512 flags (CMakeLists.txt,
// by the file-name suffix); qattention.cpp calls it only where active_isa() allows, and
// prefers the AVX512-VNNI unit where the CPU has it.
#include "kernels/cpu/qattention_avx512_traits.h"

namespace octet::cpu::qattn {

void task_avx512(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Scratch& w) {
  Kernel<Avx512Int>::task(p, b, h, i0, i1, w);
}

}  // namespace octet::cpu::qattn
