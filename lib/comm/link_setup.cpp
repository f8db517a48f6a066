// link_setup.cpp: link list validation.
#include "comm/link_setup.h"

#include <string>

#include "core/errors.h"

namespace gradshare::comm {

std::vector<int> index_links(const std::vector<int>& links, int rank, int size) {
  std::vector<int> index_of(static_cast<std::size_t>(size), -1);
  for (std::size_t i = 0; i < links.size(); ++i) {
    int link = links[i];
    GS_CHECK(link >= 0 && link < size && link != rank,
             "rank " + std::to_string(rank) + " has link " + std::to_string(link) +
                 " in a communicator of " + std::to_string(size));
    GS_CHECK(index_of[link] < 0, "link " + std::to_string(link) + " listed twice");
    index_of[link] = static_cast<int>(i);
  }
  return index_of;
}

}  // namespace gradshare::comm
