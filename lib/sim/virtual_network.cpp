#include "sim/virtual_network.h"

#include <algorithm>
#include <string>

#include "core/errors.h"

namespace gradshare::sim {

class VirtualPlane : public comm::DataPlane {
 public:
  VirtualPlane(VirtualNetwork& network, int rank, std::vector<int> links)
      : network_(network), rank_(rank), links_(std::move(links)) {}

  const std::vector<int>& links() const override { return links_; }

  bool can_send(int link, std::size_t message_bytes) override {
    const auto* l = network_.find(rank_, link);
    return l && l->queued_bytes + message_bytes <= network_.ring_bytes_;
  }

  bool try_send(int link, std::span<const std::uint8_t> message) override {
    if (message.size() > max_message_bytes())
      throw core::UserError("a message of " + std::to_string(message.size()) +
                            " bytes does not fit the simulated ring of " +
                            std::to_string(network_.ring_bytes_) + " bytes (transport.ring_bytes)");
    if (!can_send(link, message.size())) {
      ++stats_.back_pressure_events;
      return false;
    }
    auto* l = network_.find(rank_, link);
    const double arrival = network_.arrival(rank_, link, message.size(), network_.clock(rank_));
    l->queue.push_back({arrival, {message.begin(), message.end()}});
    l->queued_bytes += message.size();
    l->sent += {1.0, static_cast<double>(message.size())};
    ++stats_.messages_sent;
    stats_.bytes_sent += message.size();
    return true;
  }

  std::size_t poll(const comm::MessageHandler& on_message) override {
    const double now = network_.clock(rank_);
    std::size_t delivered = 0;
    for (auto* l : network_.inbound_[static_cast<std::size_t>(rank_)]) {
      // Take what has arrived first: on_message may send, which touches other links only.
      while (!l->queue.empty() && l->queue.front().arrival <= now) {
        auto message = std::move(l->queue.front().bytes);
        l->queue.pop_front();
        l->queued_bytes -= message.size();
        ++stats_.messages_received;
        stats_.bytes_received += message.size();
        on_message(l->from, message);
        ++delivered;
      }
    }
    return delivered;
  }

  std::size_t max_message_bytes() const override { return network_.ring_bytes_; }
  comm::TransportStats stats() const override { return stats_; }

 private:
  VirtualNetwork& network_;
  int rank_;
  std::vector<int> links_;
  comm::TransportStats stats_;
};

VirtualNetwork::VirtualNetwork(const topology::Tree& tree, const Placement& placement,
                               const LinkModel& link, std::size_t ring_bytes)
    : placement_(placement), link_(link), ring_bytes_(ring_bytes) {
  const auto ranks = static_cast<std::size_t>(tree.size());
  GS_CHECK(placement.node.size() == ranks, "placement of " + std::to_string(placement.node.size()) +
                                               " ranks for a tree of " + std::to_string(ranks));
  clock_.assign(ranks, 0.0);
  outbound_free_.assign(static_cast<std::size_t>(placement.nodes()), 0.0);
  node_inbound_.resize(static_cast<std::size_t>(placement.nodes()));
  inbound_.resize(ranks);
  for (int r = 0; r < tree.size(); ++r)
    for (int peer : tree.links(r)) {
      links_.push_back(std::make_unique<Link>());
      links_.back()->from = peer;
      links_.back()->to = r;
      inbound_[static_cast<std::size_t>(r)].push_back(links_.back().get());
    }
  for (int r = 0; r < tree.size(); ++r)
    planes_.push_back(std::make_unique<VirtualPlane>(*this, r, tree.links(r)));
}

VirtualNetwork::~VirtualNetwork() = default;

comm::DataPlane& VirtualNetwork::plane(int rank) {
  return *planes_.at(static_cast<std::size_t>(rank));
}

VirtualNetwork::Link* VirtualNetwork::find(int from, int to) {
  for (auto* l : inbound_.at(static_cast<std::size_t>(to)))
    if (l->from == from) return l;
  return nullptr;
}

const VirtualNetwork::Link* VirtualNetwork::find(int from, int to) const {
  return const_cast<VirtualNetwork*>(this)->find(from, to);
}

double VirtualNetwork::arrival(int from, int to, std::size_t bytes, double now) {
  auto* l = find(from, to);
  const double arrival = std::max(transfer(from, to, bytes, now), l->last_arrival);
  l->last_arrival = arrival;
  return arrival;
}

double VirtualNetwork::transfer(int from, int to, std::size_t bytes, double now) {
  const int a = placement_.node[static_cast<std::size_t>(from)];
  const int b = placement_.node[static_cast<std::size_t>(to)];
  if (a == b || link_.unlimited()) return now;
  const double d = link_.seconds(static_cast<double>(bytes), 1.0);
  const double burst = link_.burst_seconds();
  // The sender holds the whole message: at the rate it would go out over [begin, begin + d],
  // after everything its node sent before it; the burst lets it go that much earlier, not
  // before it is sent.
  auto& out = outbound_free_[static_cast<std::size_t>(a)];
  const double begin = std::max(now, out);
  out = begin + d;
  const double first_in = std::max(now, begin - burst);
  const double last_in = std::max(now, begin + d - burst);
  // Cut through, its bytes enter the receiver's inbound link over [first_in, last_in].
  auto& in = node_inbound_[static_cast<std::size_t>(b)];
  in.free = std::max(in.free, first_in) + d;
  // Senders stamp their messages in nearly the order of their clocks (a step apart at most):
  // periods that ended well before this one cannot concern a later stamp.
  std::erase_if(in.arriving, [now](const auto& period) { return period.second < now - 1.0; });
  in.arriving.push_back({first_in, last_in});
  // Bytes stamped before it that enter the link after its last byte do not hold it up.
  double later = 0;
  for (const auto& [first, last] : in.arriving)
    later += std::max(0.0, last - std::max(first, last_in));
  return std::max(last_in, in.free - later - burst);
}

double VirtualNetwork::next_arrival(int rank) const {
  double next = std::numeric_limits<double>::infinity();
  for (const auto* l : inbound_.at(static_cast<std::size_t>(rank)))
    if (!l->queue.empty()) next = std::min(next, l->queue.front().arrival);
  return next;
}

bool VirtualNetwork::idle() const {
  return std::all_of(links_.begin(), links_.end(), [](const auto& l) { return l->queue.empty(); });
}

Flow VirtualNetwork::link_flow(int from, int to) const {
  const auto* l = find(from, to);
  return l ? l->sent : Flow{};
}

}  // namespace gradshare::sim
