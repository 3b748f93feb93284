// CPU feature detection and the ISA level the optimized kernels use.
//
// Kernels with SIMD variants keep a table filled with the generic version first and
// overridden by the AVX2 and AVX-512 versions the active level allows. The active level
// is the highest the CPU supports (CPUID, plus the OS saving the wider registers), capped
// by the environment variable OCTET_ISA=generic|avx2|avx512, so tests and users can run
// every path on one machine. Tests switch levels in-process with ScopedIsaLevel.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace octet {

enum class IsaLevel { Generic = 0, Avx2 = 1, Avx512 = 2 };

const char* isa_name(IsaLevel level);
std::optional<IsaLevel> parse_isa(const std::string& name);

// The highest level this CPU and OS support. AVX2 means AVX2+FMA+F16C; AVX-512 means
// F, BW, DQ and VL.
IsaLevel detected_isa();
// The level kernels use now: detected_isa() capped by OCTET_ISA (read once), or the
// level a ScopedIsaLevel set. Asking for more than the CPU has is capped to what it has.
IsaLevel active_isa();
// Every level the machine can run, lowest first (what tests iterate over).
std::vector<IsaLevel> available_isas();

// Sets the active level for its lifetime (tests). Not thread-safe: kernels read the
// level when they run, so switch only while no session runs.
class ScopedIsaLevel {
 public:
  explicit ScopedIsaLevel(IsaLevel level);
  ~ScopedIsaLevel();
  ScopedIsaLevel(const ScopedIsaLevel&) = delete;
  ScopedIsaLevel& operator=(const ScopedIsaLevel&) = delete;

 private:
  IsaLevel previous_;
};

// True when this thread may run AMX-INT8 tile instructions: CPUID has AMX-TILE and
// AMX-INT8, the OS saves tile state (XCR0 bits 17, 18) and Linux granted this process the
// tile data state (arch_prctl ARCH_REQ_XCOMP_PERM, asked once; without the grant a tile
// instruction faults with SIGILL). False elsewhere, or when OCTET_AMX=0.
bool amx_int8_usable();

// The CPU's brand string ("Intel(R) Xeon(R) ...") for reports; empty when unknown.
std::string cpu_model_name();

}  // namespace octet
