// poll_during.h: runs a slow piece of a master's work (an evaluation, a checkpoint write: no
// MPI calls) on a second thread while this thread keeps calling `poll`, so that workers are
// served meanwhile (Downpour's shard pulls and pushes, gradient sharing's relays, which the
// staleness bound would otherwise wait for).
#pragma once

#include <cstddef>
#include <functional>

namespace gradshare::runtime {

// `poll` returns how much it handled (0: nothing, back off). Rethrows what `work` threw.
void poll_during(const std::function<void()>& work, const std::function<std::size_t()>& poll);

}  // namespace gradshare::runtime
