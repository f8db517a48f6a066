// virtual_network.h: data planes whose messages travel in virtual time over modelled links, so
// the real relay and update-exchange code can run a cluster of any size in one thread.
//
// Each rank has a virtual clock (seconds) that its driver advances. A message sent at the sender's
// clock t to a rank on another node occupies the sender node's outbound link and then the
// receiver node's inbound link (link_model.h, each at its rate). The sender holds the whole
// message, so the outbound link is a FIFO:
//     begin = max(t, outbound free)              outbound free = begin + d
// with d the message's wire time. Cut through, its bytes enter the inbound link over
// [begin, begin + d], interleaved packet by packet with what other nodes send it: its last
// byte leaves once the link has sent the bytes stamped before it,
//     inbound free = max(inbound free, begin) + d
//     arrival      = max(begin + d, inbound free - later)
// where `later` (in seconds) are the bytes of messages stamped before it that enter the link
// after its last byte (several nodes sending one at once: a short message is not held behind
// the rest of a long one that started just before it). Bytes stamped after it never hold it
// up. With LinkModel::burst_bytes each direction is a token bucket: the message may go out and
// leave the inbound link up to the burst's time at the rate earlier, never before t (both
// `begin` terms above less the burst, at least t; the arrival less the burst, at least the last
// byte's entry). Between ranks of one node, or over unlimited links, it arrives at t. A directed
// link delivers in order (arrival never earlier than the message before). poll() delivers what
// has arrived by the polling rank's clock. Back-pressure as on a ring: a link holds at most
// ring_bytes of messages sent and not yet polled.
// Transfers outside the data plane (transfer(): a checkpoint's state pieces on the control
// channel) take the same links by the same rules and deliver nothing.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <vector>

#include "comm/data_plane.h"
#include "sim/link_model.h"
#include "sim/traffic.h"
#include "topology/tree.h"

namespace gradshare::sim {

class VirtualNetwork {
 public:
  VirtualNetwork(const topology::Tree& tree, const Placement& placement, const LinkModel& link,
                 std::size_t ring_bytes);
  ~VirtualNetwork();

  comm::DataPlane& plane(int rank);
  double& clock(int rank) { return clock_[static_cast<std::size_t>(rank)]; }
  double clock(int rank) const { return clock_[static_cast<std::size_t>(rank)]; }
  // Arrival time of the earliest message not yet delivered to `rank` (infinity when none).
  double next_arrival(int rank) const;
  bool idle() const;  // nothing in flight anywhere
  // Messages and payload bytes sent on the directed link from -> to so far.
  Flow link_flow(int from, int to) const;
  // A transfer outside the data plane (a checkpoint's state piece on the control channel, its
  // acknowledgement) sent at `now` from -> to: it takes the nodes' links as a message does and
  // delivers nothing; returns its arrival.
  double transfer(int from, int to, std::size_t bytes, double now);

 private:
  friend class VirtualPlane;
  struct InFlight {
    double arrival;
    std::vector<std::uint8_t> bytes;
  };
  struct Link {
    int from = 0;
    int to = 0;
    std::deque<InFlight> queue;
    std::size_t queued_bytes = 0;
    double last_arrival = 0;
    Flow sent;
  };
  Link* find(int from, int to);
  const Link* find(int from, int to) const;
  // A node's inbound link: when it has sent every byte stamped so far, and the periods over
  // which recent messages' bytes enter it.
  struct NodeInbound {
    double free = 0;
    std::vector<std::pair<double, double>> arriving;
  };
  // Stamps a message sent at `now` from -> to with its arrival time.
  double arrival(int from, int to, std::size_t bytes, double now);

  Placement placement_;
  LinkModel link_;
  std::size_t ring_bytes_;
  std::vector<double> clock_;
  std::vector<double> outbound_free_;  // per node
  std::vector<NodeInbound> node_inbound_;
  std::vector<std::vector<Link*>> inbound_;  // per rank, in links() order
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<std::unique_ptr<comm::DataPlane>> planes_;
};

}  // namespace gradshare::sim
