// downpour/strategy.cpp: run_downpour: the layout, the transport, the shard servers, the roles.
#include "train/downpour/strategy.h"

#include <memory>

#include "comm/job.h"
#include "core/errors.h"
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
  auto& job = *context.job;
  const auto channel = job.control_channel(static_cast<double>(cfg.transport.timeout_ms) / 1000.0);
  auto& control = *channel;
  GS_CHECK(context.links.downpour, "no Downpour transport for this job");
  const auto transport = context.links.downpour(context, layout);
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
  job.barrier();
  context.phase = RunContext::kTraining;
  if (context.is_master())
    return run_downpour_master(context, model, *transport, control, layout, *server, start.resume);
  if (server) return run_downpour_server(context, control, *server);
  return run_downpour_worker(context, std::move(model), *transport, control, layout, start.own);
}

}  // namespace gradshare::train
