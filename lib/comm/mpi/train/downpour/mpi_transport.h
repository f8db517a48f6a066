// downpour/mpi_transport.h: Downpour's transport between MPI processes: what
// transport.data_plane says for where the ranks are (comm/node_placement.h), the same on every
// rank: RMA windows (downpour/rma_*.h) or two-sided messages (downpour/message_*.h).
#pragma once

#include <memory>

#include "comm/mpi/train/mpi_group_session.h"
#include "train/downpour/transport.h"
#include "runtime/run_context.h"

namespace gradshare::cli {

// Collective over the session's job as it is now (after a repair: the repaired one); the master
// logs the choice. `layout` must outlive the transport.
std::unique_ptr<train::DownpourTransport> make_mpi_downpour_transport(
    runtime::RunContext& context, train::MpiGroupSession& session,
    const train::DownpourLayout& layout);

}  // namespace gradshare::cli
