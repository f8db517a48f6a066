// mpi_sharing_session.cpp: MpiSharingSession.
#include "comm/mpi/train/mpi_sharing_session.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>

#include "comm/mpi/train/repair_policy.h"
#include "comm/mpi/mpi_job.h"
#include "comm/mpi/graph_comm.h"
#include "comm/mpi/make_data_plane.h"
#include "comm/mpi/mpi_error.h"
#include "comm/mpi/ulfm.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/timer.h"
#include "topology/render.h"
#include "train/join_info.h"
#include "runtime/worker_log.h"

namespace gradshare::train {

MpiSharingSession::MpiSharingSession(runtime::RunContext& context)
    : context_(context),
      fault_tolerant_(comm::fault_tolerance_active()),
      job_(comm::mpi_comm(*context.job), static_cast<int>(context.config.fault_tolerance.spares)) {
  context.size -= static_cast<int>(context.config.fault_tolerance.spares);
  context.rank = job_.my_logical();
  mode_ = topology::resolve_mode(context.config.topology, context.worker_count());
  tree_ = topology::build_tree(context.config.topology, context.size);
  if (is_spare()) return;
  tree_current_ = true;
  if (context.is_master() && mode_ == topology::Mode::kMesh)
    core::log_info("mesh tree:\n" + topology::render(tree_));
  if (!fault_tolerant_) graph_ = comm::make_graph_comm(job_.job(), tree_);
  build_planes();
}

MpiSharingSession::MpiSharingSession(runtime::RunContext& context, comm::RepairedJob joined)
    : context_(context),
      mode_(topology::resolve_mode(context.config.topology, context.worker_count())),
      fault_tolerant_(true),
      job_(joined),
      tree_(topology::build_tree(context.config.topology, context.size)) {
  context.rank = job_.my_logical();
  adopt(joined);
}

void MpiSharingSession::share_tree(int holder) {
  const auto& logical = job_.logical();
  const int root = static_cast<int>(std::find(logical.begin(), logical.end(), holder) -
                                    logical.begin());
  std::vector<int> parent = tree_.parent;
  parent.push_back(tree_.version);
  comm::check_mpi(
      MPI_Bcast(parent.data(), static_cast<int>(parent.size()), MPI_INT, root, job_.job()),
      "MPI_Bcast");
  tree_.version = parent.back();
  parent.pop_back();
  tree_.parent = parent;
  for (auto& children : tree_.children) children.clear();
  for (int rank = 1; rank < tree_.size(); ++rank)
    if (parent[static_cast<std::size_t>(rank)] >= 0)
      tree_.children[static_cast<std::size_t>(parent[static_cast<std::size_t>(rank)])].push_back(rank);
}

MpiSharingSession::~MpiSharingSession() {
  // A failed job's planes cannot be freed collectively; an intact one's are.
  if (fault_tolerant_ && plane_ && std::uncaught_exceptions() > 0) plane_->abandon();
}

void MpiSharingSession::gather_identities() {
  constexpr int kHostBytes = 256;
  struct Identity {
    char host[kHostBytes];
    int pid;
    int logical;
  };
  Identity mine{};
  gethostname(mine.host, kHostBytes - 1);
  mine.pid = static_cast<int>(getpid());
  mine.logical = context_.rank;
  std::vector<Identity> all(job_.logical().size());
  comm::check_mpi(MPI_Gather(&mine, sizeof(Identity), MPI_BYTE, all.data(), sizeof(Identity),
                             MPI_BYTE, 0, job_.job()),
                  "MPI_Gather");
  processes_.clear();
  if (!context_.is_master()) return;
  for (auto& identity : all) {
    identity.host[kHostBytes - 1] = '\0';
    processes_[identity.logical] = ft::ProcessIdentity{identity.host, identity.pid};
  }
}

void MpiSharingSession::build_planes() {
  gather_identities();
  const double timeout = static_cast<double>(context_.config.transport.timeout_ms) / 1000.0;
  const auto& logical = job_.logical();
  control_ = std::make_unique<comm::MpiControlChannel>(job_.job(), timeout, logical);
  int threads = MPI_THREAD_SINGLE;
  MPI_Query_thread(&threads);
  if (threads == MPI_THREAD_MULTIPLE)
    heartbeats_ = std::make_unique<comm::MpiControlChannel>(job_.job(), timeout, logical);
  // Links are logical ranks in the tree and ranks of the communicator on the plane.
  std::vector<int> links;
  for (int rank : tree_.links(context_.rank)) {
    const auto found = std::find(logical.begin(), logical.end(), rank);
    if (found != logical.end()) links.push_back(static_cast<int>(found - logical.begin()));
  }
  auto made = comm::make_data_plane(context_.config.transport,
                                    graph_ ? graph_.get() : job_.job(), links);
  plane_ = std::move(made.plane);
  int me = 0;
  MPI_Comm_rank(job_.job(), &me);
  const auto master = std::find(logical.begin(), logical.end(), 0);
  master_on_another_node_ =
      master != logical.end() &&
      made.node_of[static_cast<std::size_t>(master - logical.begin())] !=
          made.node_of[static_cast<std::size_t>(me)];
  if (context_.is_master()) core::log_info("data plane: " + made.description);
}

void MpiSharingSession::release_spares() { job_.release_spares(); }

bool MpiSharingSession::wait_for_assignment() {
  comm::RepairedJob repaired;
  if (!job_.wait_for_assignment(cli::repair_options(context_.config, {}), &repaired)) return false;
  context_.rank = job_.my_logical();
  last_repair_ = cli::repair_outcome(repaired);
  adopt(repaired);
  // This process's log is now the worker's (a new master's log is set up by its takeover).
  if (!repaired.became_master) runtime::log_as_worker(context_);
  return true;
}

RepairOutcome MpiSharingSession::repair(const std::vector<std::uint8_t>& join_info) {
  comm::stop_freeing_communicators();
  if (plane_) plane_->abandon();
  plane_.reset();
  if (control_) comm::revoke(control_->comm());  // interrupts peers blocked on the old job
  if (heartbeats_) comm::revoke(heartbeats_->comm());
  control_.reset();
  heartbeats_.reset();
  core::Stopwatch clock;
  // Any worker may decide the repair once the master is lost: each offers the join info.
  auto repaired = job_.repair(cli::repair_options(
      context_.config, join_info.empty() && !is_spare() ? train::join_info(context_) : join_info));
  const double communicators = clock.seconds();
  context_.rank = job_.my_logical();
  if (!is_spare()) adopt(repaired);
  char line[128];  // where a repair's time goes (logging.level: debug)
  std::snprintf(line, sizeof line, "repair: communicators %.3f s, tree and data planes %.3f s",
                communicators, clock.seconds() - communicators);
  core::log_debug(line);
  last_repair_ = cli::repair_outcome(repaired);
  return last_repair_;
}

void MpiSharingSession::adopt(const comm::RepairedJob& repaired) {
  // The tree is repaired where it is known: on the master, or after the master's loss on the
  // lowest worker that kept its process (a spare or a spawned process never saw it change).
  // Rank 0's place in the tree is the root's, whoever holds it.
  const int mine = tree_current_ ? context_.rank : std::numeric_limits<int>::max();
  int holder = 0;
  comm::check_mpi(MPI_Allreduce(&mine, &holder, 1, MPI_INT, MPI_MIN, job_.job()),
                  "MPI_Allreduce");
  if (holder == std::numeric_limits<int>::max()) holder = 0;  // nobody: the configured tree
  if (context_.rank == holder) {
    const auto workers = [](std::vector<int> ranks) {
      std::erase(ranks, 0);
      return ranks;
    };
    tree_ = repaired_tree(context_.config.topology, mode_, tree_, workers(repaired.lost),
                          workers(repaired.replaced));
  }
  share_tree(holder);
  tree_current_ = true;
  build_planes();
}

}  // namespace gradshare::train
