#include "runtime/process_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace octet {

namespace {

// "VmHWM:     11876 kB" -> bytes; 0 when the line is missing.
uint64_t proc_status_kib(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.compare(0, key.size(), key) == 0 && line.size() > key.size() && line[key.size()] == ':')
      return std::stoull(line.substr(key.size() + 1)) * 1024;
  return 0;
}

}  // namespace

uint64_t peak_rss_bytes() {
  if (uint64_t hwm = proc_status_kib("VmHWM")) return hwm;
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0 || usage.ru_maxrss < 0) return 0;
#ifdef __APPLE__
  return static_cast<uint64_t>(usage.ru_maxrss);  // bytes on macOS
#else
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // KiB on Linux
#endif
}

uint64_t current_rss_bytes() {
  // statm: total program size, then resident pages (both in pages).
  std::ifstream statm("/proc/self/statm");
  uint64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  const long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? resident_pages * static_cast<uint64_t>(page) : 0;
}

}  // namespace octet
