// The avx2 instantiation of the row kernels in vec_impl.h. Compiled with
// -mavx2 -mfma -mf16c (CMakeLists.txt sets flags by the file-name suffix); runs only where
// active_isa() allows, which vec_ops.cpp checks before using this table.
#include "kernels/cpu/simd/traits_avx2.h"
#include "kernels/cpu/simd/vec_impl.h"

namespace octet::cpu {

void fill_vec_table_avx2(VecTable& t) { simd::fill_table<simd::Avx2Traits>(t, "avx2"); }

}  // namespace octet::cpu
