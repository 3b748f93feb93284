// The generic instantiation of the int8 row kernels in quant_impl.h: one lane at a time,
// the same algorithm and rounding as the SIMD levels (see quant_table.h).
#include <cstring>

#include "kernels/cpu/simd/quant_impl.h"
#include "kernels/cpu/simd/traits_scalar.h"

namespace octet::cpu {
namespace simd {
namespace {

struct ScalarQuant : ScalarTraits {
  static I set1_i(int32_t v) { return v; }
  // Two's-complement wrap without signed overflow (int32 arithmetic as the SIMD lanes do).
  static I add_i(I a, I b) { return static_cast<I>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b)); }
  static I sub_i(I a, I b) { return static_cast<I>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b)); }
  static I mullo_i(I a, I b) { return static_cast<I>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b)); }
  static I load_i(const int32_t* p) { return *p; }
  static I load_i_tail(const int32_t* p, int64_t) { return *p; }
  static M is_nan(F a) { return a != a; }
  static F nearest_fraction(F t) { return t - round(t); }
  static bool all_lanes(M m) { return m; }
  static void store_bytes(uint8_t* p, I v) { *p = static_cast<uint8_t>(v); }
  static void store_bytes_tail(uint8_t* p, I v, int64_t) { *p = static_cast<uint8_t>(v); }
  static I load_bytes(const uint8_t* p, bool is_signed) {
    return is_signed ? static_cast<I>(static_cast<int8_t>(*p)) : static_cast<I>(*p);
  }
  static I load_bytes_tail(const uint8_t* p, int64_t, bool is_signed) { return load_bytes(p, is_signed); }
};

}  // namespace
}  // namespace simd

void fill_quant_table_generic(QuantTable& t) { simd::fill_quant<simd::ScalarQuant>(t, "generic"); }

}  // namespace octet::cpu
