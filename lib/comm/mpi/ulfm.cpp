// ulfm.cpp: ULFM wrappers (see ulfm.h).
#include "comm/mpi/ulfm.h"

#include "comm/mpi/mpi_error.h"

#if defined(GRADSHARE_HAVE_ULFM)
#include <mpi-ext.h>
#endif

namespace gradshare::comm {

#if defined(GRADSHARE_HAVE_ULFM)

bool fault_tolerance_active() {
  int* value = nullptr;
  int found = 0;
  if (MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_FT, &value, &found) != MPI_SUCCESS) return false;
  return found && value != nullptr && *value != 0;
}

std::vector<int> failed_ranks(MPI_Comm comm) {
  MPI_Group failed = MPI_GROUP_NULL, all = MPI_GROUP_NULL;
  check_mpi(MPIX_Comm_get_failed(comm, &failed), "MPIX_Comm_get_failed");
  int count = 0;
  MPI_Group_size(failed, &count);
  std::vector<int> in_failed(static_cast<std::size_t>(count)), in_comm(in_failed.size());
  for (int i = 0; i < count; ++i) in_failed[static_cast<std::size_t>(i)] = i;
  if (count > 0) {
    MPI_Comm_group(comm, &all);
    MPI_Group_translate_ranks(failed, count, in_failed.data(), all, in_comm.data());
    MPI_Group_free(&all);
  }
  MPI_Group_free(&failed);
  return in_comm;
}

bool revoked(MPI_Comm comm) {
  int flag = 0;
  check_mpi(MPIX_Comm_is_revoked(comm, &flag), "MPIX_Comm_is_revoked");
  return flag != 0;
}

void check_for_failures(MPI_Comm comm) {
  if (revoked(comm)) throw MpiError("the communicator was revoked after a process failure", MPIX_ERR_REVOKED,
                              MPIX_ERR_REVOKED);
  const auto failed = failed_ranks(comm);
  if (!failed.empty())
    throw MpiError("rank " + std::to_string(failed.front()) + " failed", MPIX_ERR_PROC_FAILED,
                   MPIX_ERR_PROC_FAILED);
}

void revoke(MPI_Comm comm) { MPIX_Comm_revoke(comm); }  // revoking twice is harmless

Communicator shrink(MPI_Comm comm) {
  MPI_Comm survivors = MPI_COMM_NULL;
  check_mpi(MPIX_Comm_shrink(comm, &survivors), "MPIX_Comm_shrink");
  return Communicator(survivors);
}

bool agree(MPI_Comm comm, bool ok) {
  int flag = ok ? 1 : 0;
  return MPIX_Comm_agree(comm, &flag) == MPI_SUCCESS && flag == 1;
}

#else

namespace {
[[noreturn]] void no_ulfm() {
  throw core::RuntimeError("this gradshare was built against an MPI without ULFM: "
                           "fault tolerance is not available");
}
}  // namespace

bool fault_tolerance_active() { return false; }
void check_for_failures(MPI_Comm) {}
bool revoked(MPI_Comm) { return false; }
std::vector<int> failed_ranks(MPI_Comm) { return {}; }
void revoke(MPI_Comm) { no_ulfm(); }
Communicator shrink(MPI_Comm) { no_ulfm(); }
bool agree(MPI_Comm, bool) { no_ulfm(); }

#endif

AgreedLoss agree_on_lost(MPI_Comm comm) {
  revoke(comm);
  AgreedLoss loss{{}, shrink(comm)};
  MPI_Group all = MPI_GROUP_NULL, alive = MPI_GROUP_NULL;
  MPI_Comm_group(comm, &all);
  MPI_Comm_group(loss.survivors.get(), &alive);
  int size = 0;
  MPI_Group_size(all, &size);
  std::vector<int> ranks(static_cast<std::size_t>(size)), in_alive(ranks.size());
  for (int i = 0; i < size; ++i) ranks[static_cast<std::size_t>(i)] = i;
  MPI_Group_translate_ranks(all, size, ranks.data(), alive, in_alive.data());
  MPI_Group_free(&all);
  MPI_Group_free(&alive);
  for (int i = 0; i < size; ++i)
    if (in_alive[static_cast<std::size_t>(i)] == MPI_UNDEFINED) loss.lost.push_back(i);
  return loss;
}

}  // namespace gradshare::comm
