// downpour/mpi_transport.cpp: make_mpi_downpour_transport.
#include "comm/mpi/train/downpour/mpi_transport.h"

#include <mpi.h>

#include <string>
#include <utility>

#include "comm/mpi/train/downpour/message_transport.h"
#include "comm/mpi/train/downpour/rma_transport.h"
#include "comm/mpi/mpi_job.h"
#include "comm/mpi/node_placement.h"
#include "comm/plane_choice.h"
#include "core/errors.h"
#include "core/log.h"

namespace gradshare::cli {

namespace {

struct TransportChoice {
  comm::PlaneKind kind = comm::PlaneKind::kRma;
  // "two_sided (4 nodes; same-node links rma (...); links between nodes two_sided (...))"
  std::string description;
};

TransportChoice choose_transport(MPI_Comm comm, const std::string& data_plane) {
  comm::choose_planes(data_plane, false);  // a bad setting fails alike on every rank, first
  const comm::NodePlacement placement = comm::discover_placement(comm);
  const comm::PlaneChoice planes = comm::choose_planes(data_plane, placement.rdma_everywhere);
  TransportChoice choice;
  choice.kind = placement.nodes == 1 ? planes.same_node : planes.between_nodes;
  choice.description =
      std::string(comm::plane_name(choice.kind)) + " (" + std::to_string(placement.nodes) +
      (placement.nodes == 1 ? " node; " : " nodes; ") + planes.describe(placement.nodes) + ")";
  return choice;
}

}  // namespace

std::unique_ptr<train::DownpourTransport> make_mpi_downpour_transport(
    runtime::RunContext& context, train::MpiGroupSession& session,
    const train::DownpourLayout& layout) {
  const MPI_Comm comm = session.job_comm();
  // Servers are never lost in-job, and the job keeps logical order: ranks 0..K-1 serve.
  train::WorkerRanks worker_ranks(static_cast<std::size_t>(layout.workers()), -1);
  const auto& logical = session.logical();
  for (std::size_t rank = 0; rank < logical.size(); ++rank) {
    if (logical[rank] < layout.servers())
      GS_CHECK(logical[rank] == static_cast<int>(rank), "parameter servers out of place");
    else
      worker_ranks[static_cast<std::size_t>(layout.worker_index(logical[rank]))] =
          static_cast<int>(rank);
  }
  const TransportChoice choice = choose_transport(comm, context.config.transport.data_plane);
  if (context.is_master()) core::log_info("downpour transport: " + choice.description);
  if (choice.kind == comm::PlaneKind::kRma)
    return std::make_unique<train::RmaDownpourTransport>(comm, context.rank, layout,
                                                         std::move(worker_ranks));
  return std::make_unique<train::MessageDownpourTransport>(comm, layout, std::move(worker_ranks));
}

}  // namespace gradshare::cli
