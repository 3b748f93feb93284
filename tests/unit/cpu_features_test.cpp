// CPU feature detection and the ISA level switch the optimized kernels read.
#include <gtest/gtest.h>

#include "kernels/dispatch/cpu_features.h"

namespace octet {
namespace {

TEST(CpuFeatures, NamesRoundTripAndUnknownNamesAreRejected) {
  for (IsaLevel l : {IsaLevel::Generic, IsaLevel::Avx2, IsaLevel::Avx512}) EXPECT_EQ(parse_isa(isa_name(l)), l);
  EXPECT_FALSE(parse_isa("AVX2"));  // the environment variable is spelled in lower case
  EXPECT_FALSE(parse_isa("sse4"));
  EXPECT_FALSE(parse_isa(""));
}

TEST(CpuFeatures, AvailableLevelsRunFromGenericToTheDetectedOne) {
  std::vector<IsaLevel> levels = available_isas();
  ASSERT_FALSE(levels.empty());
  EXPECT_EQ(levels.front(), IsaLevel::Generic);
  EXPECT_EQ(levels.back(), detected_isa());
  EXPECT_EQ(levels.size(), static_cast<size_t>(detected_isa()) + 1);
  EXPECT_LE(active_isa(), detected_isa());
}

TEST(CpuFeatures, ScopedLevelSwitchesCapsAtTheCpuAndRestores) {
  const IsaLevel before = active_isa();
  {
    ScopedIsaLevel generic(IsaLevel::Generic);
    EXPECT_EQ(active_isa(), IsaLevel::Generic);
    {
      // Asking for more than the CPU has gives what it has, never an illegal instruction.
      ScopedIsaLevel wide(IsaLevel::Avx512);
      EXPECT_EQ(active_isa(), detected_isa());
    }
    EXPECT_EQ(active_isa(), IsaLevel::Generic);
  }
  EXPECT_EQ(active_isa(), before);
}

}  // namespace
}  // namespace octet
