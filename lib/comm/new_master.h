// new_master.h: which survivor takes a lost master's place (comm/mpi/repair.h decides with it).
//
// Under Downpour the master serves shard 0 and logical ranks 1 .. first_worker - 1 serve the
// other shards. A new master on a node that also holds a server makes that node's link carry
// every worker's pushes to both shards: the pushes arrive staler and the run ends lower (4 nodes
// at 1 Gbit/s, 2 servers: up to 1 pp; docs/fault-tolerance.md). So the choice goes by node, in
// this order:
//   1. a spare on a node without a surviving server (replace mode);
//   2. the lowest worker on such a node (a spare, if any, then takes that worker's rank);
//   3. a spare anywhere (replace mode);
//   4. the decider (the lowest surviving worker).
// Without servers (first_worker 1: every strategy but Downpour) every node qualifies, so this is
// the first spare, else the decider, as before placement counted.
#pragma once

#include <cstdint>
#include <span>

namespace gradshare::comm {

struct Survivor {
  int logical = -1;        // -1: a spare
  std::uint64_t node = 0;  // equal on ranks of one node
};

// The index in `survivors` of the new master. `decider`: the index of the lowest surviving
// worker; `replace`: spares may take ranks (not in shrink mode).
int choose_new_master(std::span<const Survivor> survivors, int first_worker, int decider,
                      bool replace);

}  // namespace gradshare::comm
