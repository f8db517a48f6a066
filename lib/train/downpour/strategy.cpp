// downpour/strategy.cpp: run_downpour: the session, the layout, the transport, the shard
// servers, the roles; and a replacement's start (a worker's, or a server's rebuild).
#include "train/downpour/strategy.h"

#include <memory>

#include "core/errors.h"
#include "core/log.h"
#include "nn/model.h"
#include "train/downpour/checkpoint.h"
#include "train/downpour/network.h"
#include "train/downpour/protocol.h"
#include "train/downpour/roles.h"
#include "train/downpour/server.h"
#include "train/master_takeover.h"
#include "runtime/model_file.h"

namespace gradshare::train {

namespace {

// A worker's role, until a repair may make it the master (downpour/takeover.h).
int run_worker(runtime::RunContext& context, nn::Model model, DownpourNetwork& network,
               const StartState& start, bool replacement) {
  try {
    return run_downpour_worker(context, std::move(model), network, start, replacement);
  } catch (const DownpourBecameMaster& became) {
    const auto lock = become_master(context, network.session().last_repair());
    network.rebuild();  // collective with the survivors' rebuild
    return run_downpour_takeover(context, network, became.handover);
  }
}

}  // namespace

int run_downpour_replacement(runtime::RunContext& context, GroupSession& session) {
  const auto& cfg = context.config;
  nn::Model model = runtime::build_model(cfg);
  const DownpourLayout layout(cfg, model.parameter_count(), context.size);
  DownpourNetwork network(context, session, layout);  // collective with the survivors' rebuild
  if (context.is_master()) {
    const auto lock = become_master(context, session.last_repair());
    return run_downpour_takeover(context, network, std::nullopt);
  }
  if (layout.is_server(context.rank)) {
    core::log_info("replacing parameter server " + std::to_string(context.rank) +
                   ": its shard is rebuilt from the master's snapshot and the workers' pushes");
    return run_downpour_server(context, network, nullptr);
  }
  core::log_info("replacing worker rank " + std::to_string(context.rank) +
                 ": the model comes from the servers, the local optimizer starts afresh");
  return run_worker(context, std::move(model), network, StartState{}, /*replacement=*/true);
}

int run_downpour(runtime::RunContext& context) {
  const auto& cfg = context.config;
  GS_CHECK(context.links.group_session, "no session for this job");
  const auto session = context.links.group_session(context);
  if (session->is_spare()) {
    context.begin_training();
    return wait_as_spare(*session, context) ? run_downpour_replacement(context, *session)
                                            : core::kExitOk;
  }
  nn::Model model = runtime::build_model(cfg);
  const DownpourLayout layout(cfg, model.parameter_count(), context.size);
  DownpourNetwork network(context, *session, layout);
  const DownpourStart start = share_downpour_start(context, network.control(), layout, model);
  std::unique_ptr<ShardServer> server;
  if (layout.is_server(context.rank)) {
    const ShardRange range = layout.shard(context.rank);
    server = network.transport().serve(context.rank, cfg,
                                       model.parameters().subspan(range.begin, range.size()));
    if (start.own.resume)
      restore_optimizer_state(start.own.worker, server->optimizer(),
                              "the resumed checkpoint's server optimizer");
  }
  network.transport().wait_for_servers();
  context.begin_training();  // a rank lost before here is lost during start-up
  if (context.is_master())
    return run_downpour_master(context, std::move(model), network, std::move(server), start.resume);
  if (server) return run_downpour_server(context, network, std::move(server));
  return run_worker(context, std::move(model), network, start.own, /*replacement=*/false);
}

}  // namespace gradshare::train
