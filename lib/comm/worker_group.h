// worker_group.h: the collective operations of the synchronous strategies' workers (the master
// is not a member): element-wise all-reduce and a barrier. Every member calls every collective
// in the same order; each gets the same bits back, and those bits depend only on the members'
// values in index order, never on where the members run (a replaced member on another node must
// not change a float sum: the synchronous strategies' model equivalence after a recovery rests on
// it). Implementations: MPI on a communicator split from the job's (mpi_worker_group.h: a ring
// in a fixed order), threads of one process (in_process_group.h: index order).
#pragma once

#include <cstdint>
#include <span>

namespace gradshare::comm {

class WorkerGroup {
 public:
  virtual ~WorkerGroup() = default;

  virtual int index() const = 0;  // this member's place, 0 .. size() - 1
  virtual int size() const = 0;

  // Element-wise, in place, over every member.
  virtual void allreduce_sum(std::span<float> values) = 0;
  virtual void allreduce_max(std::span<std::int32_t> values) = 0;
  virtual void allreduce_max(std::span<std::uint64_t> values) = 0;
  // Member `root`'s bytes to every member (each passes a buffer of the same length).
  virtual void broadcast(std::span<std::uint8_t> bytes, int root) = 0;
  // Returns once every member has called it.
  virtual void barrier() = 0;
};

}  // namespace gradshare::comm
