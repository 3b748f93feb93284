#include "kernels/cpu/vec_ops.h"

#include <array>

#include "octet/error.h"

namespace octet::cpu {

const VecTable& vec_table(IsaLevel level) {
  // Built once: each level starts from the one below and overrides what its ISA has, so
  // a family without an AVX-512 version keeps using its AVX2 one.
  static const std::array<VecTable, 3> tables = [] {
    VecTable generic;
    fill_vec_table_generic(generic);
    VecTable avx2 = generic, avx512 = generic;
    if (detected_isa() >= IsaLevel::Avx2) {
      fill_vec_table_avx2(avx2);
      avx512 = avx2;
    }
    if (detected_isa() >= IsaLevel::Avx512) fill_vec_table_avx512(avx512);
    return std::array<VecTable, 3>{generic, avx2, avx512};
  }();
  OCTET_ASSERT(level <= detected_isa(), "vec_table(", isa_name(level), ") on a CPU that has only ",
               isa_name(detected_isa()));
  return tables[static_cast<size_t>(level)];
}

}  // namespace octet::cpu
