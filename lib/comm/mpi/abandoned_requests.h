// abandoned_requests.h: what happens to a request still in flight when its owner goes away
// (a destructor on an error path, a repair that drops a communicator).
//   - MPI may read a send buffer until the receiver matches the message, and write a receive
//     buffer until the message has arrived: the buffer must outlive the request.
//   - Freeing an unfinished request is not safe either: Open MPI ends the process when a freed
//     request later fails ("Send error after request freed", MPI_Request_free's rule), and under
//     ULFM a failed peer makes every request to it fail.
// So an unfinished request is kept, with its buffer, in one list for the process. Each later
// abandon_* call tests the kept requests and lets go of those MPI has finished, successfully or
// in error; the rest stay until the process exits. A receive is cancelled first, so that it
// matches nothing that arrives later.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gradshare::comm {

// For destructors: never throw and ignore MPI errors. `request` is MPI_REQUEST_NULL after.
void abandon_send(MPI_Request& request, std::vector<std::uint8_t>&& buffer) noexcept;
void abandon_receive(MPI_Request& request, std::vector<std::uint8_t>&& buffer) noexcept;

// Requests abandoned that MPI has not yet finished (the finished ones are let go first).
std::size_t abandoned_requests();

}  // namespace gradshare::comm
