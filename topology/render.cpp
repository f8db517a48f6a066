// render.cpp: ASCII rendering of a tree.
#include "topology/render.h"

#include <algorithm>
#include <string>

namespace gradshare::topology {
namespace {

void render_children(const Tree& tree, int rank, const std::string& prefix, std::string& out) {
  const auto& kids = tree.children[rank];
  for (std::size_t i = 0; i < kids.size(); ++i) {
    bool last = i + 1 == kids.size();
    out += prefix + (last ? "`-- " : "+-- ") + std::to_string(kids[i]) + "\n";
    render_children(tree, kids[i], prefix + (last ? "    " : "|   "), out);
  }
}

}  // namespace

std::string render(const Tree& tree) {
  int live = 0;
  std::size_t fan_out = 0;
  for (int rank = 0; rank < tree.size(); ++rank) {
    if (tree.is_live(rank)) ++live;
    fan_out = std::max(fan_out, tree.children[rank].size());
  }
  int workers = live - 1;
  std::string out = std::to_string(live) + " ranks (1 master, " + std::to_string(workers) +
                    (workers == 1 ? " worker" : " workers") + "), tree version " +
                    std::to_string(tree.version) + ", depth " + std::to_string(tree.max_depth()) +
                    ", widest fan-out " + std::to_string(fan_out) + "\n";
  out += "0 (master)\n";
  render_children(tree, 0, "", out);
  return out;
}

}  // namespace gradshare::topology
