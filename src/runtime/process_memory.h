// Memory use of this process, for `octet bench` and tests: the peak resident set the
// kernel recorded (what a deployment must provision) and the resident set right now.
#pragma once

#include <cstdint>

namespace octet {

// Peak resident set size of this process since it started, in bytes
// (getrusage(RUSAGE_SELF).ru_maxrss). 0 when the OS does not report it.
uint64_t peak_rss_bytes();

// Resident set size now, in bytes (/proc/self/statm on Linux). 0 when unavailable.
uint64_t current_rss_bytes();

}  // namespace octet
