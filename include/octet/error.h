// octet's single error type. Every failure a user can cause (bad file, bad input,
// unsupported op) surfaces as octet::Error with a message that names where it happened
// (file, node, op) and what was wrong; the CLI prints it on one line and exits 1.
//
// Errors that leave the public API (octet/octet.h) also carry the parts of that message
// apart: file() (the model or data file the call was about), node() (the graph node the
// message names, when it names one) and reason() (the message without the file prefix),
// so programs can react without parsing what().
#pragma once

#include <cstdint>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace octet {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message), reason_(message) {}
  Error(const std::string& message, std::string file, std::string node, std::string reason)
      : std::runtime_error(message), file_(std::move(file)), node_(std::move(node)), reason_(std::move(reason)) {}

  // The file the failing call was about; empty when none (or inside the library).
  const std::string& file() const { return file_; }
  // The node the message names ("node 'attn/MatMul' (MatMul)" -> "attn/MatMul"); empty
  // when the error is not about one node.
  const std::string& node() const { return node_; }
  // What was wrong: what() without the leading "file: ".
  const std::string& reason() const { return reason_; }

 private:
  std::string file_, node_, reason_;
};

// A memory allocation that failed or could never succeed. The innermost message says how
// much was asked for; whoever knows more (the node running, the model file) adds it with
// within(), and the result stays an OutOfMemory so the next layer can add its own part.
class OutOfMemory : public Error {
 public:
  explicit OutOfMemory(const std::string& message) : Error(message) {}
  static OutOfMemory allocating(uint64_t bytes) {
    return OutOfMemory("out of memory allocating " + std::to_string(bytes) + " bytes");
  }
  // `where` first, unless the message already starts with it.
  OutOfMemory within(const std::string& where) const {
    const std::string message = what();
    return OutOfMemory(message.rfind(where, 0) == 0 ? message : where + ": " + message);
  }
};

// Runs `body`; a failed allocation inside it (OutOfMemory, or the standard library's
// std::bad_alloc and std::length_error, whose texts mean nothing to a user) leaves as an
// OutOfMemory naming `where()`, which is only called then (hot loops pay nothing). Other
// errors pass unchanged.
template <typename Where, typename Body>
decltype(auto) naming_allocation_failures(Where&& where, Body&& body) {
  try {
    return body();
  } catch (const OutOfMemory& e) {
    throw e.within(where());
  } catch (const std::bad_alloc&) {
    throw OutOfMemory(std::string(where()) + ": out of memory");
  } catch (const std::length_error&) {
    throw OutOfMemory(std::string(where()) + ": out of memory (a size larger than any buffer can hold)");
  }
}

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
