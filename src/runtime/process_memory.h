// Memory use of this process, for `octet bench` and tests: the peak resident set (what a
// deployment must provision) and the resident set right now.
#pragma once

#include <cstdint>

namespace octet {

// Peak resident set size of this process image, in bytes. On Linux this is VmHWM from
// /proc/self/status: getrusage's ru_maxrss also counts the parent's resident set at the
// moment of fork/exec (Linux carries the old image's high-water mark across exec), so a
// small program started from a large Python process would report Python's size. Other
// systems, or no /proc: getrusage(RUSAGE_SELF).ru_maxrss. 0 when neither is available.
uint64_t peak_rss_bytes();

// Resident set size now, in bytes (/proc/self/statm on Linux). 0 when unavailable.
uint64_t current_rss_bytes();

}  // namespace octet
