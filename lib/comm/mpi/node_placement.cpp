// node_placement.cpp: discover_placement.
#include "comm/mpi/node_placement.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "comm/mpi/mpi_error.h"

namespace gradshare::comm {

bool has_rdma_device() {
  if (const char* forced = std::getenv("GRADSHARE_RDMA"); forced != nullptr && *forced != '\0')
    return std::string(forced) != "0";
  std::error_code error;
  std::filesystem::directory_iterator devices("/sys/class/infiniband", error);
  return !error && devices != std::filesystem::directory_iterator();
}

NodePlacement discover_placement(MPI_Comm comm) {
  int rank = 0;
  int size = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  NodePlacement placement;
  placement.rank = rank;
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  placement.node_comm = Communicator(node);
  // Key = comm rank, so node rank 0 is the node's lowest comm rank: the node's number.
  int node_id = rank;
  check_mpi(MPI_Bcast(&node_id, 1, MPI_INT, 0, placement.node_comm.get()), "MPI_Bcast");
  placement.node_of.assign(static_cast<std::size_t>(size), 0);
  check_mpi(MPI_Allgather(&node_id, 1, MPI_INT, placement.node_of.data(), 1, MPI_INT, comm),
            "MPI_Allgather");
  int rdma = has_rdma_device() ? 1 : 0;
  int everywhere = 0;
  check_mpi(MPI_Allreduce(&rdma, &everywhere, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  placement.rdma_everywhere = everywhere == 1;
  placement.node_rank.assign(static_cast<std::size_t>(size), -1);
  placement.nodes = 0;
  int next = 0;
  for (int r = 0; r < size; ++r) {
    if (placement.node_of[static_cast<std::size_t>(r)] == r) ++placement.nodes;
    if (placement.node_of[static_cast<std::size_t>(r)] == node_id)
      placement.node_rank[static_cast<std::size_t>(r)] = next++;
  }
  return placement;
}

}  // namespace gradshare::comm
