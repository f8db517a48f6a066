// orphaned_sends.h: what happens to a send still in flight when its owner goes away.
// MPI may read a send buffer until the receiver matches the message, so an unfinished send's
// request is freed (MPI completes it on its own) and its buffer lives until the process exits.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace gradshare::comm {

// For destructors: never throws, ignores MPI errors (a failed peer under ULFM included). A
// receive still in progress (its sender died midway) is abandoned the same way.
void abandon_send(MPI_Request& request, std::vector<std::uint8_t>&& buffer) noexcept;

}  // namespace gradshare::comm
