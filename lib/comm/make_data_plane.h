// make_data_plane.h: the data plane transport.data_plane asks for.
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "comm/data_plane.h"
#include "config/experiment_config.h"

namespace gradshare::comm {

// rma -> RmaDataPlane, two_sided -> TwoSidedDataPlane, with transport.ring_bytes per link and
// transport.timeout_ms for the setup handshake. Collective over `comm`; `links` are its ranks.
std::unique_ptr<DataPlane> make_data_plane(const config::TransportConfig& config, MPI_Comm comm,
                                           std::vector<int> links);

}  // namespace gradshare::comm
