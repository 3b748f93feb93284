// The avx512 instantiation of the row kernels in vec_impl.h. Compiled with
// -mavx512f -mavx512bw -mavx512dq -mavx512vl -mfma (CMakeLists.txt sets flags by the file-name suffix); runs only where
// active_isa() allows, which vec_ops.cpp checks before using this table.
// GCC 12's AVX-512 intrinsic headers start masked ops from _mm512_undefined_ps(), which
// its own -Wuninitialized then flags at every inlined use; nothing here reads it.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/cpu/simd/traits_avx512.h"
#include "kernels/cpu/simd/vec_impl.h"

namespace octet::cpu {

void fill_vec_table_avx512(VecTable& t) { simd::fill_table<simd::Avx512Traits>(t, "avx512"); }

}  // namespace octet::cpu
