// orphaned_sends.h: what happens to a send still in flight when its owner goes away.
// MPI may read a send buffer until the receiver matches the message, so an unfinished send's
// request and its buffer live until the process exits. The request is kept, not freed: Open MPI
// aborts a process whose freed send then fails ("Send error after request freed", its errors
// fatal on no communicator), which a send to a peer that died does under ULFM (seen once: a
// spare killed that way while a rank died in its start-up).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace gradshare::comm {

// For destructors: never throws, ignores MPI errors (a failed peer under ULFM included). A
// receive still in progress (its sender died midway) is abandoned the same way.
void abandon_send(MPI_Request& request, std::vector<std::uint8_t>&& buffer) noexcept;

}  // namespace gradshare::comm
