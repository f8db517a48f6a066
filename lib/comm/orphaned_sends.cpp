// orphaned_sends.cpp: keep_until_exit.
#include "comm/orphaned_sends.h"

#include <mutex>
#include <utility>

namespace gradshare::comm {

void keep_until_exit(std::vector<std::uint8_t>&& buffer) {
  static std::mutex mutex;
  static std::vector<std::vector<std::uint8_t>> buffers;
  std::lock_guard lock(mutex);
  buffers.push_back(std::move(buffer));  // moving a vector keeps its heap block where it is
}

}  // namespace gradshare::comm
