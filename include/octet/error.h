// octet's single error type. Every failure a user can cause (bad file, bad input,
// unsupported op) surfaces as octet::Error with a message that names where it happened
// (file, node, op) and what was wrong; the CLI prints it on one line and exits 1.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace octet {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail

// fail("node '", name, "': bad axis ", axis) throws octet::Error with the joined message.
template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw Error(detail::concat(parts...));
}

}  // namespace octet

// Internal invariant check: a broken invariant is a bug in octet, not in the user's model,
// so the message says so.
#define OCTET_ASSERT(cond, ...)                                                      \
  do {                                                                               \
    if (!(cond))                                                                     \
      ::octet::fail("internal error (", __FILE__, ":", __LINE__, "): ", #cond, " ", \
                    ##__VA_ARGS__);                                                  \
  } while (0)
