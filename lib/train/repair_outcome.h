// repair_outcome.h: what a repair of the job after a process failure did, as every session
// that repairs in-job reports it (sharing/session.h, group_session.h).
#pragma once

#include <vector>

namespace gradshare::train {

// The logical ranks whose processes died and those a new process took (each ascending), and
// how many rounds it took (a failure during a repair starts another).
struct RepairOutcome {
  std::vector<int> lost;
  std::vector<int> replaced;
  int rounds = 0;
};

}  // namespace gradshare::train
