// link_setup.h: checks shared by the MPI data planes on the link list they are given.
#pragma once

#include <vector>

namespace gradshare::comm {

// Checks that links are distinct ranks of a communicator of `size` other than `rank`, and
// returns the rank -> link index map (-1 for ranks that are not links).
std::vector<int> index_links(const std::vector<int>& links, int rank, int size);

}  // namespace gradshare::comm
