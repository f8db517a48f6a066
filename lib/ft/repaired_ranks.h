// ft/repaired_ranks.h: what a repair did to the job's ranks, as a session reports it
// (train::RepairOutcome) and a recovery record keeps it (RecoveryRecord).
#pragma once

#include <algorithm>
#include <vector>

namespace gradshare::ft {

struct RepairedRanks {
  std::vector<int> lost{};      // logical ranks whose processes died, ascending
  std::vector<int> replaced{};  // logical ranks given to new processes, ascending
  int rounds = 0;               // repair rounds (> 1: a failure hit the repair itself)

  // A new process holds `rank` since the repair: it has posted nothing and knows nothing yet.
  bool was_replaced(int rank) const {
    return std::find(replaced.begin(), replaced.end(), rank) != replaced.end();
  }
};

}  // namespace gradshare::ft
