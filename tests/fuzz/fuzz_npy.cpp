// libFuzzer target: bytes read as a .npy array and as a .npz archive, the files users
// hand to `octet run --input` and `octet quantize --calib`. An octet::Error is the right
// answer to a malformed file; anything else (a crash, a sanitizer report, another
// exception type) is a bug. The parsed tensor is read back in full, so a size the parser
// believed but the data does not have shows up as an out-of-bounds read.
//
// Built by scripts/fuzz.sh (clang, -fsanitize=fuzzer,address,undefined).
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "io/npy.h"
#include "octet/error.h"

namespace {

uint64_t touch(const octet::Tensor& t) {
  uint64_t sum = 0;
  for (size_t i = 0; i < t.bytes(); ++i) sum += t.raw()[i];
  for (const std::string& s : t.string_data()) sum += s.size();
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static volatile uint64_t sink = 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    sink = sink + touch(octet::parse_npy(bytes, "fuzz.npy"));
  } catch (const octet::Error&) {
  }
  // .npz goes through a file (read_npz takes a path), as users' archives do.
  static const std::string path = std::string(std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp") +
                                  "/octet_fuzz_" + std::to_string(::getpid()) + ".npz";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  try {
    for (const auto& [name, t] : octet::read_npz(path)) sink = sink + touch(t) + name.size();
  } catch (const octet::Error&) {
  }
  try {
    octet::read_npy_header(path);
  } catch (const octet::Error&) {
  }
  return 0;
}
