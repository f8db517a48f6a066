// link_model.h: what the simulator assumes of a network link between two nodes.
//
// A node has one network interface, full duplex, `bits_per_second` in each direction: everything
// a node sends to other nodes shares its outbound rate, everything it receives its inbound rate
// (as on the emulated cluster of scripts/cluster-local, whose tbf qdiscs shape both ends of each
// node's link). Ranks on one node exchange messages through memory: no link time.
// A message of b payload bytes occupies a link for
//     (b * (1 + packet_overhead) + message_overhead_bytes) * 8 / bits_per_second
// seconds: packet_overhead covers Ethernet, IP and TCP headers per full-size segment
// (66 of 1514 bytes), message_overhead_bytes the MPI and ring-frame headers of each message.
// On a busy link TCP packs queued messages into full segments, so a message does not pay for a
// segment of its own: measured on the emulated cluster at 10 Mbit/s, the master's link carried
// its payload at the full rate with the packet overhead alone (docs/design.md, the simulator).
// A link may let `burst_bytes` through at once after a quiet spell, as a token bucket does
// (scripts/cluster-local's tbf qdiscs hold max(256 KiB, 4 ms at the rate)): a lightly loaded
// link then adds no time, a saturated one still carries its rate. 0 is a wire.
#pragma once

#include <string>

namespace gradshare::sim {

struct LinkModel {
  double bits_per_second = 0;  // 0: unlimited
  double message_overhead_bytes = 64;
  double packet_overhead = 66.0 / 1448.0;
  double burst_bytes = 0;

  bool unlimited() const { return bits_per_second <= 0; }
  // Seconds a link is busy with `messages` messages of `payload_bytes` in all.
  double seconds(double payload_bytes, double messages) const;
  // Bytes on the wire for those messages (what a link's rate limits).
  double wire_bytes(double payload_bytes, double messages) const;
  // The seconds at the rate that the burst saves a message at most.
  double burst_seconds() const;
};

// scripts/cluster-local's tbf burst at `bits_per_second`, in bytes.
double cluster_local_burst_bytes(double bits_per_second);

// "1gbit", "100mbit", "10gbit", "500kbit", "2.5gbit", "unlimited" (tc's units, bits per second)
// -> bits per second, 0 for unlimited. core::UserError naming `what` otherwise.
double parse_rate(const std::string& text, const std::string& what);
// 1e9 -> "1gbit", 0 -> "unlimited".
std::string rate_name(double bits_per_second);

}  // namespace gradshare::sim
