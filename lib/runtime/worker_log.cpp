// worker_log.cpp: log_as_worker.
#include "runtime/worker_log.h"

#include <string>

#include "core/log.h"

namespace gradshare::runtime {

void log_as_worker(RunContext& context) {
  auto& logger = core::Logger::instance();
  logger.set_tag("rank " + std::to_string(context.rank));
  logger.open_file(context.run_directory.file("rank-" + std::to_string(context.rank) + ".log"));
}

}  // namespace gradshare::runtime
