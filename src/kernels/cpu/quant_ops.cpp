#include "kernels/cpu/quant_ops.h"

#include <array>
#include <atomic>

#include "octet/error.h"

namespace octet::cpu {
namespace {
std::atomic<int64_t> reference_runs{0};
}  // namespace

int64_t int8_reference_runs() { return reference_runs.load(); }
void count_int8_reference_run() { ++reference_runs; }

const QuantTable& quant_table(IsaLevel level) {
  // Built once, like vec_table(): each level starts from the one below.
  static const std::array<QuantTable, 3> tables = [] {
    QuantTable generic;
    fill_quant_table_generic(generic);
    QuantTable avx2 = generic, avx512 = generic;
    if (detected_isa() >= IsaLevel::Avx2) {
      fill_quant_table_avx2(avx2);
      avx512 = avx2;
    }
    if (detected_isa() >= IsaLevel::Avx512) fill_quant_table_avx512(avx512);
    return std::array<QuantTable, 3>{generic, avx2, avx512};
  }();
  OCTET_ASSERT(level <= detected_isa(), "quant_table(", isa_name(level), ") on a CPU that has only ",
               isa_name(detected_isa()));
  return tables[static_cast<size_t>(level)];
}

}  // namespace octet::cpu
