// plane_choice.cpp: the per-link data plane rule.
#include "comm/plane_choice.h"

#include "core/errors.h"

namespace gradshare::comm {

const char* plane_name(PlaneKind kind) { return kind == PlaneKind::kRma ? "rma" : "two_sided"; }

std::string PlaneChoice::describe(int nodes) const {
  std::string text = std::string(nodes > 1 ? "same-node links " : "links ") +
                     plane_name(same_node) + " (" + same_node_why + ")";
  if (nodes > 1)
    text += "; links between nodes " + std::string(plane_name(between_nodes)) + " (" +
            between_nodes_why + ")";
  return text;
}

PlaneChoice choose_planes(const std::string& setting, bool rdma_everywhere, bool fault_tolerant) {
  PlaneChoice choice;
  if (setting == "rma" || setting == "two_sided") {
    const PlaneKind kind = setting == "rma" ? PlaneKind::kRma : PlaneKind::kTwoSided;
    const std::string why = "transport.data_plane: " + setting;
    return PlaneChoice{kind, why, kind, why};
  }
  if (setting != "auto")
    throw core::UserError("transport.data_plane: expected auto, rma or two_sided, got '" +
                          setting + "'");
  choice.same_node = PlaneKind::kRma;
  choice.same_node_why = fault_tolerant ? "shared memory; rebuilt after a repair" : "shared memory";
  if (fault_tolerant) {
    choice.between_nodes = PlaneKind::kTwoSided;
    choice.between_nodes_why =
        "fault tolerance: one-sided operations across a network are untested after a failure";
  } else if (rdma_everywhere) {
    choice.between_nodes = PlaneKind::kRma;
    choice.between_nodes_why = "every rank has an RDMA device";
  } else {
    choice.between_nodes = PlaneKind::kTwoSided;
    choice.between_nodes_why =
        "no RDMA device on every rank: one-sided operations over TCP are emulated in software";
  }
  return choice;
}

}  // namespace gradshare::comm
