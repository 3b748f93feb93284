// `octet quantize --calib-text FILE --tokenizer tokenizer.json`: calibration samples from
// raw text. Tokenizing needs a Hugging Face tokenizer, which lives in Python (`tokenizers`),
// so the CLI runs `python3 -m octet write-text-samples` from octet's Python package
// (`pip install .`) to write one .npz per line into a temporary folder, and calibrates on
// that folder like any --calib PATH. $OCTET_PYTHON names another interpreter.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace octet::cli {

// Runs argv (no shell, stdout sent to our stderr); the exit status, -1 when it could not start.
int run_helper(const std::vector<std::string>& args);
// $OCTET_PYTHON, else python3: the interpreter with octet's Python package.
std::string python_interpreter();

class TextSamplesFolder {
 public:
  // Writes the samples (or throws octet::Error saying what failed and what to install).
  TextSamplesFolder(const std::string& model, const std::string& text_file, const std::string& tokenizer,
                    int max_length);
  ~TextSamplesFolder();  // removes the folder
  TextSamplesFolder(const TextSamplesFolder&) = delete;
  TextSamplesFolder& operator=(const TextSamplesFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace octet::cli
