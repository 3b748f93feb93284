// The generic instantiation of the row kernels in vec_impl.h. Compiled with
// plain C++ (the baseline the compiler targets) (CMakeLists.txt sets flags by the file-name suffix); runs only where
// active_isa() allows, which vec_ops.cpp checks before using this table.
#include "kernels/cpu/simd/traits_scalar.h"
#include "kernels/cpu/simd/vec_impl.h"

namespace octet::cpu {

void fill_vec_table_generic(VecTable& t) { simd::fill_table<simd::ScalarTraits>(t, "generic"); }

}  // namespace octet::cpu
