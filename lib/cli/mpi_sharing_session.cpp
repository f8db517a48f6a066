// cli/mpi_sharing_session.cpp: MpiSharingSession.
#include "cli/mpi_sharing_session.h"

#include <unistd.h>

#include <algorithm>

#include "comm/mpi_job.h"
#include "comm/graph_comm.h"
#include "comm/make_data_plane.h"
#include "comm/mpi_error.h"
#include "comm/ulfm.h"
#include "core/errors.h"
#include "core/log.h"
#include "topology/render.h"
#include "train/sharing/gradient_sharing.h"

namespace gradshare::train {

MpiSharingSession::MpiSharingSession(RunContext& context)
    : context_(context),
      fault_tolerant_(comm::fault_tolerance_active()),
      universe_(comm::Communicator::duplicate(comm::mpi_comm(*context.job))) {
  const int spares = static_cast<int>(context.config.fault_tolerance.spares);
  const int job_size = context.size - spares;
  const bool spare = context.rank >= job_size;
  MPI_Comm job = MPI_COMM_NULL;
  comm::check_mpi(MPI_Comm_split(universe_.get(), spare ? MPI_UNDEFINED : 0, context.rank, &job),
                  "MPI_Comm_split");
  comm_ = comm::Communicator(job);
  for (int rank = job_size; rank < context.size; ++rank) spares_.push_back(rank);
  context.size = job_size;
  mode_ = topology::resolve_mode(context.config.topology, context.worker_count());
  tree_ = topology::build_tree(context.config.topology, context.size);
  if (spare) {
    context.rank = -1;
    return;
  }
  for (int rank = 0; rank < context.size; ++rank) logical_.push_back(rank);
  if (context.is_master() && mode_ == topology::Mode::kMesh)
    core::log_info("mesh tree:\n" + topology::render(tree_));
  if (!fault_tolerant_) graph_ = comm::make_graph_comm(comm_.get(), tree_);
  build_planes();
}

MpiSharingSession::MpiSharingSession(RunContext& context, comm::RepairedJob joined)
    : context_(context),
      mode_(topology::resolve_mode(context.config.topology, context.worker_count())),
      fault_tolerant_(true),
      tree_(topology::build_tree(context.config.topology, context.size)) {
  adopt(joined);
}

void MpiSharingSession::share_tree() {
  std::vector<int> parent = tree_.parent;
  parent.push_back(tree_.version);
  comm::check_mpi(MPI_Bcast(parent.data(), static_cast<int>(parent.size()), MPI_INT, 0, comm_.get()),
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

std::vector<int> MpiSharingSession::live_workers() const {
  std::vector<int> workers;
  for (int logical : logical_)
    if (logical != 0) workers.push_back(logical);
  std::sort(workers.begin(), workers.end());
  return workers;
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
  std::vector<Identity> all(logical_.size());
  comm::check_mpi(MPI_Gather(&mine, sizeof(Identity), MPI_BYTE, all.data(), sizeof(Identity),
                             MPI_BYTE, 0, comm_.get()),
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
  control_ = std::make_unique<comm::MpiControlChannel>(comm_.get(), timeout, logical_);
  int threads = MPI_THREAD_SINGLE;
  MPI_Query_thread(&threads);
  if (threads == MPI_THREAD_MULTIPLE)
    heartbeats_ = std::make_unique<comm::MpiControlChannel>(comm_.get(), timeout, logical_);
  // Links are logical ranks in the tree and ranks of the communicator on the plane.
  std::vector<int> links;
  for (int logical : tree_.links(context_.rank)) {
    const auto found = std::find(logical_.begin(), logical_.end(), logical);
    if (found != logical_.end()) links.push_back(static_cast<int>(found - logical_.begin()));
  }
  auto made = comm::make_data_plane(context_.config.transport,
                                    graph_ ? graph_.get() : comm_.get(), links);
  plane_ = std::move(made.plane);
  if (context_.is_master()) core::log_info("data plane: " + made.description);
}

void MpiSharingSession::release_spares() {
  if (context_.is_master() && !spares_.empty()) comm::release_spares(universe_.get(), spares_);
  spares_.clear();
}

bool MpiSharingSession::wait_for_assignment() {
  while (comm::wait_as_spare(universe_.get()) == comm::SpareCall::kRepair) {
    repair({});
    if (!is_spare()) {
      log_as_worker(context_);  // this process's log is now the worker's
      return true;
    }
  }
  return false;
}

RepairOutcome MpiSharingSession::repair(const std::vector<std::uint8_t>& join_info) {
  comm::stop_freeing_communicators();
  if (plane_) plane_->abandon();
  plane_.reset();
  if (control_) comm::revoke(control_->comm());  // interrupts peers blocked on the old job
  if (heartbeats_) comm::revoke(heartbeats_->comm());
  control_.reset();
  heartbeats_.reset();
  comm::RepairOptions options;
  const auto& policy = context_.config.fault_tolerance.on_worker_failure;
  options.mode = policy == "replace" ? comm::RepairMode::kReplace
                                     : comm::RepairMode::kShrink;  // abort: shrink, then stop
  options.spawn = context_.config.fault_tolerance.spares == 0;
  options.join_info = join_info;
  options.deadline_seconds = static_cast<double>(context_.config.transport.timeout_ms) / 1000.0;
  auto job = comm::repair_job(universe_.get(), context_.rank, logical_, options);
  adopt(job);  // sorts lost and replaced
  return {job.lost, job.replaced, job.rounds};
}

void MpiSharingSession::adopt(comm::RepairedJob& job) {
  universe_ = std::move(job.universe);
  comm_ = std::move(job.job);
  logical_ = job.logical;
  spares_ = job.spares;
  context_.rank = job.my_logical;
  if (is_spare()) return;
  std::sort(job.lost.begin(), job.lost.end());
  std::sort(job.replaced.begin(), job.replaced.end());
  if (context_.is_master())
    tree_ = repaired_tree(context_.config.topology, mode_, tree_, job.lost, job.replaced);
  share_tree();
  build_planes();
}

}  // namespace gradshare::train
