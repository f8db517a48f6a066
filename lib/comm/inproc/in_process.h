// in_process.h: a data plane whose ranks are threads of one process, for unit tests of relay,
// dedupe and ordering logic without mpirun. Every directed link is a ring of `ring_bytes` in
// the same frame format as the RMA rings (one writer thread, one reader thread, atomic
// head/tail counters), so back-pressure behaves as it does between processes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "comm/data_plane.h"
#include "topology/tree.h"

namespace gradshare::comm {

// One single-producer single-consumer ring between two threads.
struct InProcessRing {
  explicit InProcessRing(std::size_t capacity) : bytes(capacity) {}
  std::vector<std::uint8_t> bytes;
  alignas(64) std::atomic<std::uint64_t> tail{0};  // written by the sender only
  alignas(64) std::atomic<std::uint64_t> head{0};  // written by the receiver only
};

class InProcessDataPlane : public DataPlane {
 public:
  // outbound[i] / inbound[i]: the rings to / from links[i], owned by the fabric.
  InProcessDataPlane(int rank, std::vector<int> links, std::vector<InProcessRing*> outbound,
                     std::vector<InProcessRing*> inbound, std::size_t capacity);

  const std::vector<int>& links() const override { return links_; }
  bool can_send(int link, std::size_t message_bytes) override;
  bool try_send(int link, std::span<const std::uint8_t> message) override;
  std::size_t poll(const MessageHandler& on_message) override;
  std::size_t max_message_bytes() const override;
  TransportStats stats() const override { return stats_; }

 private:
  std::size_t link_index(int link) const;

  int rank_;
  std::vector<int> links_;
  std::vector<InProcessRing*> outbound_;
  std::vector<InProcessRing*> inbound_;
  std::vector<std::uint64_t> sent_tail_;  // our own copy of each outbound tail
  std::size_t capacity_;
  std::vector<std::uint8_t> frame_;
  std::vector<std::uint8_t> scratch_;
  TransportStats stats_;
  bool polling_ = false;
};

class InProcessFabric {
 public:
  // Planes for ranks 0..ranks-1 linked as `tree` says (tree.size() must equal ranks).
  InProcessFabric(int ranks, const topology::Tree& tree, std::size_t ring_bytes);
  int ranks() const { return static_cast<int>(planes_.size()); }
  // The plane of `rank`; drive each from one thread at a time.
  DataPlane& plane(int rank);

 private:
  std::vector<std::unique_ptr<InProcessRing>> rings_;
  std::vector<std::unique_ptr<InProcessDataPlane>> planes_;
};

}  // namespace gradshare::comm
