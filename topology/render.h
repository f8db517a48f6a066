// render.h: the tree as ASCII art, for `gradshare topology --ranks N --mode mesh`.
#pragma once

#include <string>

#include "topology/tree.h"

namespace gradshare::topology {

// A summary line (ranks, version, deepest level, widest fan-out) and one line per live rank:
//   0 (master)
//   +-- 1
//   |   +-- 3
//   |   `-- 4
//   `-- 2
std::string render(const Tree& tree);

}  // namespace gradshare::topology
