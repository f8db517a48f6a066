// make_data_plane.cpp: data plane factory.
#include "comm/make_data_plane.h"

#include <utility>

#include "comm/rma_data_plane.h"
#include "comm/two_sided_data_plane.h"
#include "core/errors.h"

namespace gradshare::comm {

std::unique_ptr<DataPlane> make_data_plane(const config::TransportConfig& config, MPI_Comm comm,
                                           std::vector<int> links) {
  if (config.ring_bytes < 64)
    throw core::UserError("transport.ring_bytes must be at least 64, got " +
                          std::to_string(config.ring_bytes));
  auto ring_bytes = static_cast<std::size_t>(config.ring_bytes);
  if (config.data_plane == "rma")
    return std::make_unique<RmaDataPlane>(comm, std::move(links), ring_bytes,
                                          static_cast<double>(config.timeout_ms) / 1000.0);
  if (config.data_plane == "two_sided")
    return std::make_unique<TwoSidedDataPlane>(comm, std::move(links), ring_bytes);
  throw core::UserError("transport.data_plane: expected rma or two_sided, got '" +
                        config.data_plane + "'");
}

}  // namespace gradshare::comm
