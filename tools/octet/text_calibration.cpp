#include "text_calibration.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "octet/error.h"

extern char** environ;

namespace octet::cli {

namespace fs = std::filesystem;

// Runs argv (no shell) with its stdout sent to our stderr, so that `--json` output stays
// clean; returns the exit status, or -1 when the program could not be started.
int run_helper(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string python_interpreter() {
  const char* python = std::getenv("OCTET_PYTHON");
  return python && *python ? python : "python3";
}

TextSamplesFolder::TextSamplesFolder(const std::string& model, const std::string& text_file,
                                     const std::string& tokenizer, int max_length) {
  if (tokenizer.empty()) fail("--calib-text needs --tokenizer tokenizer.json (a Hugging Face tokenizer file)");
  if (max_length < 1) fail("--max-length must be >= 1, got ", max_length);
  for (const std::string& f : {text_file, tokenizer})
    if (!fs::is_regular_file(f)) fail(f, ": no such file");
  std::string pattern = (fs::temp_directory_path() / "octet-text-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) fail("cannot create a temporary folder for the text samples: ", std::strerror(errno));
  path_ = pattern;
  const std::string interpreter = python_interpreter();
  const int status = run_helper({interpreter, "-m", "octet", "write-text-samples", text_file, "--tokenizer", tokenizer,
                                 "--model", model, "--out", path_.string(), "--max-length", std::to_string(max_length)});
  if (status != 0) {
    std::error_code ec;
    fs::remove_all(path_, ec);
    fail("--calib-text: `", interpreter, " -m octet write-text-samples` ",
         status < 0 ? "could not be started" : "failed (exit " + std::to_string(status) + ")",
         "; tokenizing needs octet's Python package (pip install . in octet's repository) and `tokenizers` "
         "(pip install tokenizers); set OCTET_PYTHON to use another interpreter");
  }
}

TextSamplesFolder::~TextSamplesFolder() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace octet::cli
