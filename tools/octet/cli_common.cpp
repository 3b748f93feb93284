#include "cli_common.h"

#include <charconv>

#include "analysis/model_files.h"
#include "io/output_file.h"
#include "octet/error.h"

namespace octet::cli {

Bindings parse_dim_bindings(const std::vector<std::string>& items) {
  Bindings out;
  for (const std::string& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      fail("--dim '", item, "': expected NAME=VALUE, e.g. --dim seq=128");
    std::string name = item.substr(0, eq), text = item.substr(eq + 1);
    int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < 0)
      fail("--dim '", item, "': '", text, "' is not a non-negative integer");
    out[name] = value;
  }
  return out;
}

void check_output_paths(const std::string& model, const std::filesystem::path& out, bool external_data, bool force,
                        const std::string& what) {
  namespace fs = std::filesystem;
  if (out.empty()) fail("-o OUT is required: the file to write the ", what, " model to");
  if (fs::path(model).lexically_normal() == out.lexically_normal())
    fail(out.string(), ": is the input model; write the ", what, " model to another file");
  const ModelFiles inputs = model_files(model);
  std::error_code ec;
  const fs::path data_file = external_data ? fs::path(out.string() + ".data") : fs::path();
  for (const fs::path& target : {out, data_file}) {
    if (target.empty()) continue;
    check_replaceable(target);  // a device, FIFO, link or folder: never, --force or not
    if (!fs::exists(target, ec)) continue;
    for (const fs::path& in : inputs.all())
      if (fs::equivalent(target, in, ec))
        fail(out.string(), ": writing here would overwrite ", in == inputs.model ? "the input model " : "the input's data file ",
             in.string(), "; write the ", what, " model to another file");
    if (!force) fail(target.string(), ": already exists; use --force to replace it");
  }
}

}  // namespace octet::cli
