// downpour/network.cpp: DownpourNetwork.
#include "train/downpour/network.h"

#include <algorithm>
#include <string>

#include "core/errors.h"
#include "runtime/checkpointer.h"

namespace gradshare::train {

DownpourNetwork::DownpourNetwork(runtime::RunContext& context, GroupSession& session,
                                 const DownpourLayout& layout)
    : context_(context), session_(session), layout_(layout) {
  transport_ = session.downpour_transport(context, layout);
}

DownpourNetwork::~DownpourNetwork() {
  if (previous_) previous_->abandon();  // on a broken job
}

std::vector<int> DownpourNetwork::live_workers() const {
  auto live = session_.live_workers();
  std::erase_if(live, [this](int rank) { return layout_.is_server(rank); });
  return live;
}

void DownpourNetwork::rebuild() {
  const auto& repair = session_.last_repair();
  for (int lost : repair.lost)
    if (layout_.is_server(lost) && !repair.was_replaced(lost))
      throw core::JobCannotGoOn(
          "parameter server " + std::to_string(lost) + " (rank " + std::to_string(lost) +
          ") failed and nothing took its place (fault_tolerance.on_worker_failure " +
          context_.config.fault_tolerance.on_worker_failure +
          "; replace rebuilds a lost shard in the job): the updates it applied since the newest "
          "checkpoint are lost with it; rerun the same command (gradshare run --max-restarts "
          "does) to resume every shard from " +
          runtime::resume_point(context_.run_directory));
  // Made first: when yet another failure breaks the making, the current transport (which this
  // rank's server or links still use) stays, and the next try carries from it.
  auto fresh = session_.downpour_transport(context_, layout_);
  if (previous_) previous_->abandon();
  previous_ = std::move(transport_);
  transport_ = std::move(fresh);
}

std::unique_ptr<ShardServer> DownpourNetwork::carry(ShardServer& old,
                                                    const config::ExperimentConfig& config) {
  auto fresh = transport_->serve(old.shard(), config, old.parameters());
  fresh->take_over(old);
  return fresh;
}

void DownpourNetwork::keep_alive(std::vector<std::unique_ptr<ShardLink>> links) {
  for (auto& link : links) kept_links_.push_back(std::move(link));
}

void DownpourNetwork::send_resync(ShardServer& server) {
  for (int rank : live_workers())
    send(control(), rank, DownpourResync{server.applied_seq(layout_.worker_index(rank))});
}

}  // namespace gradshare::train
