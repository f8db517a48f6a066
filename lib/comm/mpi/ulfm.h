// ulfm.h: the User-Level Failure Mitigation calls gradshare uses (MPIX_Comm_revoke, _shrink,
// _agree, _get_failed), behind functions that also compile against an MPI without ULFM (there
// fault_tolerance_active() is false and the rest throw).
#pragma once

#include <mpi.h>

#include <vector>

#include "comm/mpi/communicator.h"

namespace gradshare::comm {

// True when this job was started with fault tolerance on (Open MPI: `mpirun --with-ft ulfm`,
// read from the MPI_FT attribute): a failed process then leaves the others running.
bool fault_tolerance_active();

// Throws a process-failure MpiError when a process of `comm` is known to have failed or `comm`
// was revoked. Local and cheap: called on every control-plane poll, because a probe for
// MPI_ANY_SOURCE does not report a dead peer by itself.
void check_for_failures(MPI_Comm comm);

// Whether `comm` was revoked (MPIX_Comm_is_revoked).
bool revoked(MPI_Comm comm);

// Ranks of `comm` known to have failed (MPIX_Comm_get_failed).
std::vector<int> failed_ranks(MPI_Comm comm);

// Interrupts every pending and future operation on `comm` at every rank (MPIX_Comm_revoke).
void revoke(MPI_Comm comm);

// The surviving processes of `comm` in a new communicator, rank order kept (MPIX_Comm_shrink).
Communicator shrink(MPI_Comm comm);

// What the survivors of `comm` agree was lost, the same at every survivor however the failure
// reached each (a collective fails only where the lost rank's part was due): revokes `comm`, so
// that every rank's pending call on it fails too, and shrinks it. `lost` are the ranks of `comm`
// missing from `survivors`. Blocks until every survivor calls it.
struct AgreedLoss {
  std::vector<int> lost;
  Communicator survivors;
};
AgreedLoss agree_on_lost(MPI_Comm comm);

// Fault-tolerant agreement: true when every surviving rank passed ok=true and no process of
// `comm` failed in the meantime (MPIX_Comm_agree; a failure shows as an error or false).
bool agree(MPI_Comm comm, bool ok);

}  // namespace gradshare::comm
