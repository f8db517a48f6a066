// orphaned_sends.h: keeps the buffers of sends still in flight when their owner goes away.
// MPI may read a send buffer until the receiver matches the message, so a plane destroyed with
// unmatched sends hands their buffers here; they live until the process exits.
#pragma once

#include <cstdint>
#include <vector>

namespace gradshare::comm {

void keep_until_exit(std::vector<std::uint8_t>&& buffer);

}  // namespace gradshare::comm
