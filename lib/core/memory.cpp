#include "core/memory.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstring>

namespace gradshare::core {

std::int64_t peak_resident_bytes() {
  if (std::FILE* status = std::fopen("/proc/self/status", "r")) {
    char line[256];
    long long kib = -1;
    while (std::fgets(line, sizeof line, status))
      if (std::strncmp(line, "VmHWM:", 6) == 0 && std::sscanf(line + 6, "%lld", &kib) == 1) break;
    std::fclose(status);
    if (kib >= 0) return static_cast<std::int64_t>(kib) * 1024;
  }
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // kilobytes on Linux and the BSDs
}

}  // namespace gradshare::core
