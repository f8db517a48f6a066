// node_placement.h: which ranks of a communicator share a node, and whether every rank has an
// RDMA device; what transport.data_plane: auto decides by (plane_choice.h).
//
// Nodes are MPI_COMM_TYPE_SHARED groups (ranks that can share memory), numbered by their lowest
// rank. An RDMA device is an entry under /sys/class/infiniband (InfiniBand, RoCE, iWARP), the
// devices UCX and osc rdma drive; GRADSHARE_RDMA=0/1 overrides the probe on a rank.
#pragma once

#include <mpi.h>

#include <vector>

#include "comm/mpi/communicator.h"

namespace gradshare::comm {

struct NodePlacement {
  int rank = 0;               // this process's comm rank
  std::vector<int> node_of;   // comm rank -> its node's lowest comm rank
  int nodes = 1;
  bool rdma_everywhere = false;
  Communicator node_comm;     // this rank's node, ranks in comm order
  std::vector<int> node_rank;  // comm rank -> rank in node_comm (-1 on other nodes)

  bool same_node(int a, int b) const {
    return node_of[static_cast<std::size_t>(a)] == node_of[static_cast<std::size_t>(b)];
  }
};

// Collective over `comm`.
NodePlacement discover_placement(MPI_Comm comm);

// This process's probe (or GRADSHARE_RDMA).
bool has_rdma_device();

}  // namespace gradshare::comm
