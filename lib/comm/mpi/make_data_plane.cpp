// make_data_plane.cpp: data plane factory.
#include "comm/mpi/make_data_plane.h"

#include <utility>

#include "comm/mpi/node_placement.h"
#include "comm/plane_choice.h"
#include "comm/mpi/rma_data_plane.h"
#include "comm/split_data_plane.h"
#include "comm/mpi/two_sided_data_plane.h"
#include "comm/mpi/ulfm.h"
#include "core/errors.h"

namespace gradshare::comm {
namespace {

std::unique_ptr<DataPlane> make_plane(PlaneKind kind, const config::TransportConfig& config,
                                      MPI_Comm comm, std::vector<int> links) {
  auto ring_bytes = static_cast<std::size_t>(config.ring_bytes);
  if (kind == PlaneKind::kRma)
    return std::make_unique<RmaDataPlane>(comm, std::move(links), ring_bytes,
                                          static_cast<double>(config.timeout_ms) / 1000.0);
  return std::make_unique<TwoSidedDataPlane>(comm, std::move(links), ring_bytes);
}

}  // namespace

MadeDataPlane make_data_plane(const config::TransportConfig& config, MPI_Comm comm,
                              std::vector<int> links) {
  if (config.ring_bytes < 64)
    throw core::UserError("transport.ring_bytes must be at least 64, got " +
                          std::to_string(config.ring_bytes));
  // Validated before the collective probe, so a bad setting fails alike on every rank.
  choose_planes(config.data_plane, false);
  NodePlacement placement = discover_placement(comm);
  const PlaneChoice choice =
      choose_planes(config.data_plane, placement.rdma_everywhere, fault_tolerance_active());
  MadeDataPlane made;
  made.node_of = placement.node_of;
  made.description = std::to_string(placement.nodes) + (placement.nodes == 1 ? " node: " : " nodes: ") +
                     choice.describe(placement.nodes);
  if (placement.nodes == 1 || choice.same_node == choice.between_nodes) {
    const PlaneKind kind = placement.nodes == 1 ? choice.same_node : choice.between_nodes;
    made.plane = make_plane(kind, config, comm, std::move(links));
    return made;
  }
  // Both parts are built on every rank (each constructor is collective over its communicator),
  // with no links where a rank has none of that kind.
  std::vector<int> local_inner, local_outer, remote;
  for (int link : links) {
    if (placement.same_node(placement.rank, link)) {
      local_inner.push_back(placement.node_rank[static_cast<std::size_t>(link)]);
      local_outer.push_back(link);
    } else {
      remote.push_back(link);
    }
  }
  std::vector<SplitDataPlane::Part> parts;
  parts.push_back({make_plane(choice.same_node, config, placement.node_comm.get(), local_inner),
                   local_outer});
  parts.push_back({make_plane(choice.between_nodes, config, comm, remote), remote});
  made.plane = std::make_unique<SplitDataPlane>(std::move(parts),
                                                static_cast<int>(placement.node_of.size()));
  return made;
}

}  // namespace gradshare::comm
