#include "cli_common.h"

#include <charconv>

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

}  // namespace octet::cli
