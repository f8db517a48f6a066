// memory.h: this process's resident memory, for the peak-memory figures of a run.
#pragma once

#include <cstdint>

namespace gradshare::core {

// The most resident memory this process has had so far, in bytes (Linux: VmHWM of
// /proc/self/status; elsewhere getrusage's ru_maxrss); 0 when the system does not tell.
std::int64_t peak_resident_bytes();

}  // namespace gradshare::core
