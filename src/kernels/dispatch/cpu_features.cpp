#include "kernels/dispatch/cpu_features.h"

#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "octet/error.h"

namespace octet {
namespace {

struct Cpuid {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Cpuid cpuid(unsigned leaf, unsigned subleaf = 0) {
  Cpuid r;
  __cpuid_count(leaf, subleaf, r.a, r.b, r.c, r.d);
  return r;
}

// XGETBV: which register states the OS saves on a context switch. A CPU with AVX-512
// under an OS that does not save ZMM state must not use it.
uint64_t xgetbv0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}

IsaLevel detect() {
  if (__get_cpuid_max(0, nullptr) < 7) return IsaLevel::Generic;
  Cpuid l1 = cpuid(1), l7 = cpuid(7, 0);
  bool osxsave = l1.c & (1u << 27);
  if (!osxsave) return IsaLevel::Generic;
  uint64_t xcr0 = xgetbv0();
  bool ymm_saved = (xcr0 & 0x6) == 0x6;
  bool zmm_saved = (xcr0 & 0xe6) == 0xe6;
  bool avx = l1.c & (1u << 28), fma = l1.c & (1u << 12), f16c = l1.c & (1u << 29);
  bool avx2 = l7.b & (1u << 5);
  if (!(ymm_saved && avx && fma && f16c && avx2)) return IsaLevel::Generic;
  bool f = l7.b & (1u << 16), dq = l7.b & (1u << 17), bw = l7.b & (1u << 30), vl = l7.b & (1u << 31);
  if (zmm_saved && f && dq && bw && vl) return IsaLevel::Avx512;
  return IsaLevel::Avx2;
}

bool detect_amx_int8() {
  if (const char* env = std::getenv("OCTET_AMX"); env && std::strcmp(env, "0") == 0) return false;
  if (__get_cpuid_max(0, nullptr) < 0xd) return false;
  const Cpuid l1 = cpuid(1), l7 = cpuid(7, 0);
  if (!(l1.c & (1u << 27))) return false;  // OSXSAVE
  const bool tile = l7.d & (1u << 24), int8 = l7.d & (1u << 25);
  if (!(tile && int8) || (xgetbv0() & 0x60000) != 0x60000) return false;
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

IsaLevel from_environment() {
  IsaLevel level = detected_isa();
  if (const char* env = std::getenv("OCTET_ISA")) {
    auto asked = parse_isa(env);
    if (!asked) fail("OCTET_ISA='", env, "' is not one of generic, avx2, avx512");
    if (*asked < level) level = *asked;
  }
  return level;
}

std::atomic<int>& active_level() {
  static std::atomic<int> level{static_cast<int>(from_environment())};
  return level;
}

}  // namespace

const char* isa_name(IsaLevel level) {
  switch (level) {
    case IsaLevel::Generic: return "generic";
    case IsaLevel::Avx2: return "avx2";
    case IsaLevel::Avx512: return "avx512";
  }
  return "?";
}

std::optional<IsaLevel> parse_isa(const std::string& name) {
  for (IsaLevel l : {IsaLevel::Generic, IsaLevel::Avx2, IsaLevel::Avx512})
    if (name == isa_name(l)) return l;
  return std::nullopt;
}

IsaLevel detected_isa() {
  static const IsaLevel level = detect();
  return level;
}

bool amx_int8_usable() {
  static const bool usable = detected_isa() == IsaLevel::Avx512 && detect_amx_int8();
  return usable;
}

IsaLevel active_isa() { return static_cast<IsaLevel>(active_level().load(std::memory_order_relaxed)); }

std::vector<IsaLevel> available_isas() {
  std::vector<IsaLevel> out;
  for (int l = 0; l <= static_cast<int>(detected_isa()); ++l) out.push_back(static_cast<IsaLevel>(l));
  return out;
}

ScopedIsaLevel::ScopedIsaLevel(IsaLevel level) : previous_(active_isa()) {
  if (level > detected_isa()) level = detected_isa();
  active_level().store(static_cast<int>(level));
}

ScopedIsaLevel::~ScopedIsaLevel() { active_level().store(static_cast<int>(previous_)); }

std::string cpu_model_name() {
  if (__get_cpuid_max(0x80000000, nullptr) < 0x80000004) return "";
  char brand[49] = {};
  for (unsigned i = 0; i < 3; ++i) {
    Cpuid r = cpuid(0x80000002 + i);
    std::memcpy(brand + 16 * i, &r, 16);
  }
  std::string s(brand);
  size_t first = s.find_first_not_of(' ');
  return first == std::string::npos ? "" : s.substr(first);
}

}  // namespace octet
