// plane_choice.h: which data plane a link gets (transport.data_plane).
//
// One-sided RMA is fast only where hardware moves the bytes: shared memory between ranks of one
// node (Open MPI's osc sm) or an RDMA network (osc ucx / osc rdma over InfiniBand or RoCE).
// Between nodes joined by TCP, Open MPI emulates one-sided operations with messages that only
// progress inside the target's MPI calls: measured 6x slower than two-sided messages on 4
// namespaced nodes here, and the late delivery made asynchronous sharing diverge. So `auto`
// (the default) keeps RMA rings for same-node links, and between nodes uses RMA only when every
// rank sees an RDMA device, two-sided messages otherwise. Under ULFM (mpirun --with-ft ulfm)
// `auto` keeps the same-node RMA rings: a repair abandons every window (no collective free
// with a dead member) and allocates new ones on the repaired communicator, and a put into a
// dead peer's shared memory neither fails nor blocks (measured: every fault scenario on one
// host, and killed workers across the emulated nodes). Between nodes it uses two-sided
// messages even with RDMA: whether one-sided operations to a failed peer over a network
// return was not measured here (no RDMA device). `rma` and `two_sided` force one plane for
// every link.
#pragma once

#include <string>

namespace gradshare::comm {

enum class PlaneKind { kRma, kTwoSided };
const char* plane_name(PlaneKind kind);

struct PlaneChoice {
  PlaneKind same_node = PlaneKind::kRma;
  std::string same_node_why;
  PlaneKind between_nodes = PlaneKind::kTwoSided;
  std::string between_nodes_why;

  // "same-node links: rma (why); links between nodes: two_sided (why)"; a job on one node
  // names only the first.
  std::string describe(int nodes) const;
};

// `setting`: transport.data_plane (auto, rma or two_sided); rdma_everywhere: every rank of the
// job has an RDMA device; fault_tolerant: ULFM is active.
PlaneChoice choose_planes(const std::string& setting, bool rdma_everywhere,
                          bool fault_tolerant = false);

}  // namespace gradshare::comm
