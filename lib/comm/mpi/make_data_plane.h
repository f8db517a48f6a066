// make_data_plane.h: the data plane transport.data_plane asks for.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "comm/data_plane.h"
#include "config/experiment_config.h"

namespace gradshare::comm {

struct MadeDataPlane {
  std::unique_ptr<DataPlane> plane;
  // Which plane each kind of link got and why, the same text on every rank (for the log).
  std::string description;
  // Comm rank -> its node's lowest comm rank (comm/node_placement.h).
  std::vector<int> node_of;
};

// rma -> RmaDataPlane, two_sided -> TwoSidedDataPlane, auto -> per link as plane_choice.h
// says: one plane when every link gets the same kind, else a SplitDataPlane of RMA rings over
// this node's ranks and two-sided messages to the other nodes. transport.ring_bytes per link,
// transport.timeout_ms for the setup handshake. Collective over `comm`; `links` are its ranks.
MadeDataPlane make_data_plane(const config::TransportConfig& config, MPI_Comm comm,
                              std::vector<int> links);

}  // namespace gradshare::comm
