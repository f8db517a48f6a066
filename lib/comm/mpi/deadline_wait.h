// deadline_wait.h: waiting on peers with a deadline. A missed deadline becomes a RuntimeError
// that names the peer and what was awaited ("timed out after 120.0 s waiting for rank 3:
// partition grant"), never a silent hang; waits poll with back-off, never busy-spin.
#pragma once

#include <mpi.h>

#include <span>
#include <string>
#include <string_view>

#include "comm/control_channel.h"

namespace gradshare::comm {

// Waits until every request has completed. On timeout the pending requests are cancelled and
// abandoned (abandoned_requests.h), and the error names the first pending one's peer (peers[i]
// belongs to requests[i]).
void wait_all(std::span<MPI_Request> requests, std::span<const int> peers, double timeout_seconds,
              std::string_view awaited);

}  // namespace gradshare::comm
