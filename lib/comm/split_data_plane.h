// split_data_plane.h: one DataPlane made of several, each link served by the plane that fits
// it (transport.data_plane: auto puts same-node links on RMA rings in shared memory and links
// between nodes on two-sided messages).
//
// Every part is a complete plane over its own communicator, so its links are ranks of that
// communicator; a part carries the map from those ranks back to ranks of the communicator the
// caller speaks in. A link belongs to exactly one part, so per-link FIFO order is the part's.
// poll() polls every part once and reports each message under the caller's rank of its sender;
// the handler may try_send on any link (also one of the part being polled), as on any plane.
#pragma once

#include <memory>
#include <vector>

#include "comm/data_plane.h"

namespace gradshare::comm {

class SplitDataPlane : public DataPlane {
 public:
  struct Part {
    std::unique_ptr<DataPlane> plane;
    // outer_rank[i]: the caller's rank of plane->links()[i].
    std::vector<int> outer_rank;
  };

  // `size`: ranks of the caller's communicator. Throws when a link is served twice.
  SplitDataPlane(std::vector<Part> parts, int size);

  const std::vector<int>& links() const override { return links_; }
  bool can_send(int link, std::size_t message_bytes) override;
  bool try_send(int link, std::span<const std::uint8_t> message) override;
  std::size_t poll(const MessageHandler& on_message) override;
  std::size_t max_message_bytes() const override;
  TransportStats stats() const override;
  void abandon() override;

 private:
  struct Route {
    int part = -1;
    int inner_rank = -1;
  };
  const Route& route(int link) const;

  std::vector<Part> parts_;
  std::vector<int> links_;
  std::vector<Route> routes_;                 // by the caller's rank
  std::vector<std::vector<int>> outer_of_;    // per part: inner rank -> caller's rank
};

}  // namespace gradshare::comm
