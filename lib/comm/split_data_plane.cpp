// split_data_plane.cpp: SplitDataPlane.
#include "comm/split_data_plane.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "core/errors.h"

namespace gradshare::comm {

SplitDataPlane::SplitDataPlane(std::vector<Part> parts, int size)
    : parts_(std::move(parts)), routes_(static_cast<std::size_t>(size)) {
  outer_of_.resize(parts_.size());
  for (std::size_t p = 0; p < parts_.size(); ++p) {
    const auto& inner_links = parts_[p].plane->links();
    const auto& outer = parts_[p].outer_rank;
    GS_CHECK(inner_links.size() == outer.size(), "split plane part " + std::to_string(p) +
                                                     " maps " + std::to_string(outer.size()) +
                                                     " of " + std::to_string(inner_links.size()) +
                                                     " links");
    for (std::size_t i = 0; i < outer.size(); ++i) {
      const int rank = outer[i];
      GS_CHECK(rank >= 0 && rank < size, "split plane link " + std::to_string(rank) +
                                             " outside a communicator of " +
                                             std::to_string(size));
      Route& r = routes_[static_cast<std::size_t>(rank)];
      GS_CHECK(r.part < 0, "split plane: link " + std::to_string(rank) + " served twice");
      r = Route{static_cast<int>(p), inner_links[i]};
      auto& map = outer_of_[p];
      if (map.size() <= static_cast<std::size_t>(inner_links[i]))
        map.resize(static_cast<std::size_t>(inner_links[i]) + 1, -1);
      map[static_cast<std::size_t>(inner_links[i])] = rank;
      links_.push_back(rank);
    }
  }
  std::sort(links_.begin(), links_.end());
}

const SplitDataPlane::Route& SplitDataPlane::route(int link) const {
  GS_CHECK(link >= 0 && link < static_cast<int>(routes_.size()) &&
               routes_[static_cast<std::size_t>(link)].part >= 0,
           "rank " + std::to_string(link) + " is not a link");
  return routes_[static_cast<std::size_t>(link)];
}

bool SplitDataPlane::can_send(int link, std::size_t message_bytes) {
  const Route& r = route(link);
  return parts_[static_cast<std::size_t>(r.part)].plane->can_send(r.inner_rank, message_bytes);
}

bool SplitDataPlane::try_send(int link, std::span<const std::uint8_t> message) {
  const Route& r = route(link);
  return parts_[static_cast<std::size_t>(r.part)].plane->try_send(r.inner_rank, message);
}

std::size_t SplitDataPlane::poll(const MessageHandler& on_message) {
  std::size_t delivered = 0;
  for (std::size_t p = 0; p < parts_.size(); ++p) {
    const auto& outer = outer_of_[p];
    delivered += parts_[p].plane->poll([&](int from, std::span<const std::uint8_t> message) {
      on_message(outer[static_cast<std::size_t>(from)], message);
    });
  }
  return delivered;
}

std::size_t SplitDataPlane::max_message_bytes() const {
  std::size_t limit = std::numeric_limits<std::size_t>::max();
  for (const Part& part : parts_) limit = std::min(limit, part.plane->max_message_bytes());
  return limit;
}

TransportStats SplitDataPlane::stats() const {
  TransportStats total;
  for (const Part& part : parts_) total += part.plane->stats();
  return total;
}

void SplitDataPlane::abandon() {
  for (Part& part : parts_) part.plane->abandon();
}

}  // namespace gradshare::comm
