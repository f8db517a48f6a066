// downpour/transport.cpp: choosing and making Downpour's transport.
#include "train/downpour/transport.h"

#include "comm/node_placement.h"
#include "train/downpour/message_transport.h"
#include "train/downpour/rma_transport.h"

namespace gradshare::train {

DownpourTransportChoice choose_downpour_transport(MPI_Comm comm, const std::string& data_plane) {
  comm::choose_planes(data_plane, false);  // a bad setting fails alike on every rank, first
  const comm::NodePlacement placement = comm::discover_placement(comm);
  const comm::PlaneChoice planes = comm::choose_planes(data_plane, placement.rdma_everywhere);
  DownpourTransportChoice choice;
  choice.kind = placement.nodes == 1 ? planes.same_node : planes.between_nodes;
  choice.description =
      std::string(comm::plane_name(choice.kind)) + " (" + std::to_string(placement.nodes) +
      (placement.nodes == 1 ? " node; " : " nodes; ") + planes.describe(placement.nodes) + ")";
  return choice;
}

std::unique_ptr<DownpourTransport> make_downpour_transport(comm::PlaneKind kind, MPI_Comm comm,
                                                           int rank, const DownpourLayout& layout) {
  if (kind == comm::PlaneKind::kRma)
    return std::make_unique<RmaDownpourTransport>(comm, rank, layout);
  return std::make_unique<MessageDownpourTransport>(comm, layout);
}

}  // namespace gradshare::train
