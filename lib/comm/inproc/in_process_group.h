// in_process_group.h: a worker group whose members are threads of one process. A collective
// waits until every member has arrived; the last to arrive reduces the members' buffers in
// member order into one result, which every member copies back: all get the same bits, as from
// MPI. A member that does not arrive within the timeout makes the others throw (a test fails
// instead of hanging). A hub given an interrupt check calls it while a member waits: when it
// throws (a process failed, comm/inproc/in_process_failures.h), the member leaves with its
// exception and the hub is broken: every collective on it throws from then on, as on a revoked
// communicator.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/worker_group.h"

namespace gradshare::comm {

class InProcessGroupHub {
 public:
  using Check = std::function<void()>;
  InProcessGroupHub(int size, double timeout_seconds, Check interrupt = {});
  ~InProcessGroupHub();
  int size() const { return size_; }
  // Member `index`'s group; one thread uses it.
  WorkerGroup& member(int index);

  // Runs one collective for member `index`: `bytes` is its buffer. The last member to arrive
  // calls reduce(buffers, result) with every member's buffer in member order; then each copies
  // `result` into its own buffer.
  using Reduce = std::function<void(const std::vector<std::span<std::uint8_t>>& buffers,
                                    std::vector<std::uint8_t>& result)>;
  void collective(int index, std::span<std::uint8_t> bytes, const Reduce& reduce);

 private:
  int size_;
  double timeout_seconds_;
  Check interrupt_;
  bool broken_ = false;  // a member left a collective by the interrupt check
  std::mutex mutex_;
  std::condition_variable arrived_all_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  std::vector<std::span<std::uint8_t>> buffers_;
  std::vector<std::uint8_t> result_;
  std::vector<std::unique_ptr<WorkerGroup>> members_;
};

}  // namespace gradshare::comm
