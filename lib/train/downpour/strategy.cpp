// downpour/strategy.cpp: run_downpour: the layout, the transport, the shard servers, the roles.
#include "train/downpour/strategy.h"

#include <memory>

#include "comm/mpi_job.h"
#include "comm/control_channel.h"
#include "comm/mpi_control_channel.h"
#include "comm/mpi_error.h"
#include "core/log.h"
#include "nn/model.h"
#include "train/downpour/checkpoint.h"
#include "train/downpour/protocol.h"
#include "train/downpour/roles.h"
#include "train/downpour/server.h"
#include "train/downpour/transport.h"
#include "train/model_file.h"

namespace gradshare::train {

int run_downpour(RunContext& context) {
  const auto& cfg = context.config;
  nn::Model model = nn::Model::build(cfg.model, static_cast<std::uint64_t>(cfg.run.seed));
  const DownpourLayout layout(cfg, model.parameter_count(), context.size);
  const MPI_Comm world = comm::mpi_comm(*context.job);  // the transports are MPI's
  comm::MpiControlChannel control(world, static_cast<double>(cfg.transport.timeout_ms) / 1000.0);
  const DownpourTransportChoice choice =
      choose_downpour_transport(world, cfg.transport.data_plane);
  if (context.is_master()) core::log_info("downpour transport: " + choice.description);
  const auto transport = make_downpour_transport(choice.kind, world, context.rank, layout);
  const DownpourStart start = share_downpour_start(context, control, layout, model);
  std::unique_ptr<ShardServer> server;
  if (layout.is_server(context.rank)) {
    const ShardRange range = layout.shard(context.rank);
    server =
        transport->serve(context.rank, cfg, model.parameters().subspan(range.begin, range.size()));
    if (start.own.resume)
      restore_optimizer_state(start.own.worker, server->optimizer(),
                              "the resumed checkpoint's server optimizer");
  }
  // Nobody pushes to or reads a server before every server has put its shard in place.
  comm::check_mpi(MPI_Barrier(world), "MPI_Barrier (Downpour set-up)");
  context.phase = RunContext::kTraining;
  if (context.is_master())
    return run_downpour_master(context, model, *transport, control, layout, *server, start.resume);
  if (server) return run_downpour_server(context, control, *server);
  return run_downpour_worker(context, std::move(model), *transport, control, layout, start.own);
}

}  // namespace gradshare::train
