// ft/process_identity.h: where a job process runs, so that the master can stop one that hangs.
#pragma once

#include <string>

namespace gradshare::ft {

struct ProcessIdentity {
  std::string host;
  int pid = 0;
};

}  // namespace gradshare::ft
