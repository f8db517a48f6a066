// flood_node.cpp: FloodNode.
#include "flood_node.h"

#include <atomic>
#include <cstring>
#include <thread>

#include "core/rng.h"
#include "core/timer.h"

namespace gradshare::comm::testing {
namespace {

constexpr std::uint32_t kMagic = 0x464C4F44;  // "FLOD"
constexpr std::size_t kHeader = 16;

void fill_payload(std::uint64_t seed, int origin, int seq, std::uint8_t* out, std::size_t n) {
  core::Rng rng = core::Rng::derive(seed, static_cast<std::uint64_t>(origin) + 1,
                                    static_cast<std::uint64_t>(seq));
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(rng.next() >> 56);
}

std::size_t message_length(const FloodOptions& options, int origin, int seq) {
  core::Rng rng = core::Rng::derive(options.seed, 1000003 + static_cast<std::uint64_t>(origin),
                                    static_cast<std::uint64_t>(seq));
  std::size_t low = std::max(options.min_message_bytes, kHeader);
  return low + rng.below(options.max_message_bytes - low + 1);
}

}  // namespace

std::vector<std::uint8_t> flood_message(const FloodOptions& options, int origin, int seq) {
  std::size_t length = message_length(options, origin, seq);
  std::vector<std::uint8_t> message(length);
  std::uint32_t header[4] = {kMagic, static_cast<std::uint32_t>(origin),
                             static_cast<std::uint32_t>(seq), static_cast<std::uint32_t>(length)};
  std::memcpy(message.data(), header, kHeader);
  fill_payload(options.seed, origin, seq, message.data() + kHeader, length - kHeader);
  return message;
}

FloodNode::FloodNode(DataPlane& plane, int rank, const FloodOptions& options)
    : plane_(plane),
      rank_(rank),
      options_(options),
      relay_(plane, options.relay_queue_bytes),
      next_seq_(static_cast<std::size_t>(options.ranks), 0) {}

std::size_t FloodNode::expected() const {
  if (!options_.participates(rank_)) return 0;
  std::size_t others = 0;
  for (int rank = 0; rank < options_.ranks; ++rank)
    if (rank != rank_ && options_.participates(rank)) ++others;
  return others * static_cast<std::size_t>(options_.messages_per_rank);
}

bool FloodNode::complete() const {
  return originated_ == to_originate() && received_ >= expected() && relay_.queued_messages() == 0;
}

int FloodNode::to_originate() const {
  return options_.participates(rank_) ? options_.messages_per_rank : 0;
}

void FloodNode::error(std::string text) {
  ++error_count_;
  if (errors_.size() < 10) errors_.push_back("rank " + std::to_string(rank_) + ": " + text);
}

bool FloodNode::step() {
  bool progress = false;
  if (originated_ < to_originate() && !relay_.saturated()) {
    relay_.forward(kOriginHere, flood_message(options_, rank_, originated_));
    ++originated_;
    progress = true;
  }
  std::size_t queued = relay_.queued_messages();
  if (plane_.poll([this](int from, std::span<const std::uint8_t> m) { on_message(from, m); }) > 0)
    progress = true;
  if (relay_.flush() < queued) progress = true;
  return progress;
}

void FloodNode::on_message(int from, std::span<const std::uint8_t> message) {
  std::uint32_t header[4] = {};
  if (message.size() < kHeader) {
    error("short message of " + std::to_string(message.size()) + " bytes from " +
          std::to_string(from));
    return;
  }
  std::memcpy(header, message.data(), kHeader);
  auto origin = static_cast<int>(header[1]);
  auto seq = static_cast<int>(header[2]);
  if (header[0] != kMagic || origin < 0 || origin >= options_.ranks || origin == rank_ ||
      !options_.participates(origin) || seq < 0 || seq >= options_.messages_per_rank ||
      header[3] != message.size()) {
    error("bad header from link " + std::to_string(from));
    return;
  }
  std::string id = "(" + std::to_string(origin) + ", " + std::to_string(seq) + ")";
  if (seq < next_seq_[origin]) {
    error("duplicate " + id);
    return;
  }
  if (seq > next_seq_[origin])
    error("out of order " + id + ", expected seq " + std::to_string(next_seq_[origin]));
  if (flood_message(options_, origin, seq) !=
      std::vector<std::uint8_t>(message.begin(), message.end()))
    error("corrupt contents of " + id);
  next_seq_[origin] = seq + 1;
  ++received_;
  relay_.forward(from, message);
}

void run_flood_threads(const std::vector<std::unique_ptr<FloodNode>>& nodes) {
  const int ranks = static_cast<int>(nodes.size());
  std::atomic<int> complete{0};
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank)
    threads.emplace_back([&, rank] {
      FloodNode& node = *nodes[static_cast<std::size_t>(rank)];
      core::Backoff backoff(200);
      bool counted = false;
      while (complete.load() < ranks) {
        if (node.step())
          backoff.reset();
        else
          backoff.wait();
        if (!counted && node.complete()) {
          counted = true;
          complete.fetch_add(1);
        }
      }
    });
  for (auto& thread : threads) thread.join();
  for (const auto& node : nodes) node->final_poll();
}

}  // namespace gradshare::comm::testing
