// graph_comm.cpp: make_graph_comm, graph_neighbors.
#include "comm/mpi/graph_comm.h"

#include <string>

#include "comm/mpi/mpi_error.h"
#include "core/errors.h"

namespace gradshare::comm {

Communicator make_graph_comm(MPI_Comm comm, const topology::Tree& tree) {
  int rank = 0;
  int size = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  if (tree.size() != size)
    throw core::RuntimeError("the topology tree has " + std::to_string(tree.size()) +
                             " ranks but the communicator " + std::to_string(size));
  std::vector<int> links = tree.links(rank);
  int degree = static_cast<int>(links.size());
  int unused = 0;  // MPI wants a valid pointer even for degree 0
  int* neighbours = links.empty() ? &unused : links.data();
  MPI_Comm graph = MPI_COMM_NULL;
  check_mpi(MPI_Dist_graph_create_adjacent(comm, degree, neighbours, MPI_UNWEIGHTED, degree,
                                           neighbours, MPI_UNWEIGHTED, MPI_INFO_NULL,
                                           /*reorder=*/0, &graph),
            "MPI_Dist_graph_create_adjacent");
  return Communicator(graph);
}

std::vector<int> graph_neighbors(MPI_Comm graph) {
  int in_degree = 0;
  int out_degree = 0;
  int weighted = 0;
  check_mpi(MPI_Dist_graph_neighbors_count(graph, &in_degree, &out_degree, &weighted),
            "MPI_Dist_graph_neighbors_count");
  std::vector<int> sources(static_cast<std::size_t>(in_degree) + 1);
  std::vector<int> destinations(static_cast<std::size_t>(out_degree) + 1);
  check_mpi(MPI_Dist_graph_neighbors(graph, in_degree, sources.data(), MPI_UNWEIGHTED, out_degree,
                                     destinations.data(), MPI_UNWEIGHTED),
            "MPI_Dist_graph_neighbors");
  destinations.resize(static_cast<std::size_t>(out_degree));
  return destinations;
}

}  // namespace gradshare::comm
