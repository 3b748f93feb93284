// oneDNN picks its ISA once per process, so ScopedIsaLevel cannot switch it: tests of
// oneDNN-backed kernels cover every level by re-running themselves in a child process
// per level with OCTET_ISA set.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "kernels/dispatch/cpu_features.h"

namespace octet::testing {

// Runs this test binary's tests matching `gtest_filter` once per level in
// available_isas() under OCTET_ISA=level; each must pass. A child's output goes to
// OCTET_BINARY_DIR/<log_stem>_<level>.log and into the failure message. In a child run
// (OCTET_ISA already set) the calling test skips itself instead.
inline void expect_child_runs_pass_at_every_isa(const std::string& gtest_filter, const std::string& log_stem) {
  if (std::getenv("OCTET_ISA")) GTEST_SKIP() << "already a child run";
  // The test binary's own path: /proc/self/exe inside the shell command would be the shell.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  for (IsaLevel level : available_isas()) {
    const std::string log = std::string(OCTET_BINARY_DIR) + "/" + log_stem + "_" + isa_name(level) + ".log";
    const std::string cmd = std::string("OCTET_ISA=") + isa_name(level) + " '" + self +
                            "' --gtest_brief=1 --gtest_filter='" + gtest_filter + "' > '" + log + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(rc, 0) << "OCTET_ISA=" << isa_name(level) << ":\n" << text.str();
  }
}

}  // namespace octet::testing
