// cli/sharing_replacement.cpp: run_sharing_replacement.
#include "cli/sharing_replacement.h"

#include <string>

#include "cli/mpi_sharing_session.h"
#include "comm/byte_io.h"
#include "data/loader.h"
#include "train/normalization_message.h"
#include "train/sharing/gradient_sharing.h"
#include "train/sharing/roles.h"

namespace gradshare::cli {

int run_sharing_replacement(train::RunContext& context, comm::RepairedJob joined) {
  comm::ByteReader info(joined.join_info, "join info");
  const std::string run_path = info.get_string();
  context.size = info.get<std::int32_t>();
  // The master's normalisation: partitioned reading then reads no feature at start-up.
  const auto normalization = train::parse_normalization(info.get_vector<std::uint8_t>());
  info.expect_end();
  // Collective with the survivors' repair.
  train::MpiSharingSession session(context, std::move(joined));
  context.data = data::load_data(context.config.data,
                                 static_cast<std::uint64_t>(context.config.run.seed),
                                 /*evaluation_sets=*/false, normalization);
  context.run_directory = report::RunDirectory::attach(run_path);
  train::log_as_worker(context);
  return train::run_sharing_worker(context, session, /*replacement=*/true);
}

}  // namespace gradshare::cli
