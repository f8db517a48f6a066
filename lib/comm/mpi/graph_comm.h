// graph_comm.h: the topology as an MPI distributed-graph communicator.
#pragma once

#include <mpi.h>

#include <vector>

#include "comm/mpi/communicator.h"
#include "topology/tree.h"

namespace gradshare::comm {

// MPI_Dist_graph_create_adjacent over `comm` with each rank's tree links as both sources and
// destinations, without reordering (rank r of the result is rank r of `comm`). Collective;
// tree.size() must equal the size of `comm`.
Communicator make_graph_comm(MPI_Comm comm, const topology::Tree& tree);

// The destinations of this rank in a distributed-graph communicator (MPI_Dist_graph_neighbors).
std::vector<int> graph_neighbors(MPI_Comm graph);

}  // namespace gradshare::comm
