// The one writer every output goes through (src/io/output_file.h): only a regular file or
// a new path is ever replaced; a device, FIFO, symbolic link or folder is refused, with
// or without --force, and nothing is left behind (issue 19).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "io/output_file.h"
#include "octet/error.h"

namespace octet {
namespace {

namespace fs = std::filesystem;

class OutputFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("octet_output_file_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Only the given entries remain in the folder: no temporary file left behind.
  void expect_only(std::initializer_list<const char*> names) {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir_)) {
      ++n;
      bool listed = false;
      for (const char* name : names) listed |= e.path().filename() == name;
      EXPECT_TRUE(listed) << "left behind: " << e.path();
    }
    EXPECT_EQ(n, names.size());
  }
  void expect_refused(const fs::path& p, const std::string& kind) {
    try {
      write_file_replacing(p, "data");
      ADD_FAILURE() << "wrote to " << p;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(p.string() + ": is " + kind), std::string::npos) << e.what();
    }
  }
  fs::path dir_;
};

TEST_F(OutputFile, CreatesANewFileAndReplacesARegularOne) {
  write_file_replacing(dir_ / "a.bin", "first");
  EXPECT_EQ(read(dir_ / "a.bin"), "first");
  write_file_replacing(dir_ / "a.bin", "second");
  EXPECT_EQ(read(dir_ / "a.bin"), "second");
  expect_only({"a.bin"});
}

TEST_F(OutputFile, RefusesAFifo) {
  ASSERT_EQ(::mkfifo((dir_ / "pipe").c_str(), 0600), 0);
  expect_refused(dir_ / "pipe", "a FIFO");
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(dir_ / "pipe")));
  expect_only({"pipe"});
}

TEST_F(OutputFile, RefusesASymlinkToAFileAndADanglingOne) {
  write_file_replacing(dir_ / "target", "keep");
  fs::create_symlink(dir_ / "target", dir_ / "link");
  fs::create_symlink(dir_ / "nowhere", dir_ / "dangling");
  expect_refused(dir_ / "link", "a symbolic link");
  expect_refused(dir_ / "dangling", "a symbolic link");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir_ / "link")));
  EXPECT_EQ(read(dir_ / "target"), "keep");
  EXPECT_FALSE(fs::exists(dir_ / "nowhere"));
  expect_only({"target", "link", "dangling"});
}

TEST_F(OutputFile, RefusesAFolder) {
  fs::create_directories(dir_ / "sub");
  expect_refused(dir_ / "sub", "a folder");
  EXPECT_TRUE(fs::is_directory(dir_ / "sub"));
}

TEST_F(OutputFile, RefusesADeviceNode) {
  // A private twin of /dev/null (root only): if the check were broken, only it is lost.
  if (::geteuid() != 0) GTEST_SKIP() << "creating a device node needs root";
  ASSERT_EQ(::mknod((dir_ / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  expect_refused(dir_ / "null", "a character device");
  struct stat st {};
  ASSERT_EQ(::lstat((dir_ / "null").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(OutputFile, ChecksTheTargetAgainBeforeRenaming) {
  // The target turns into a FIFO while the file is being written: still refused.
  ReplacingFile f(dir_ / "out");
  f.stream() << "data";
  ASSERT_EQ(::mkfifo((dir_ / "out").c_str(), 0600), 0);
  EXPECT_THROW(f.commit(), Error);
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(dir_ / "out")));
}

TEST_F(OutputFile, UncommittedWriteLeavesNothing) {
  {
    ReplacingFile f(dir_ / "out");
    f.stream() << "partial";
  }
  expect_only({});
}

}  // namespace
}  // namespace octet
