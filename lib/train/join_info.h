// join_info.h: what the master hands a process spawned to replace a dead worker (through the
// repair, comm/repair.h): the run directory, the job's size and the training set's
// normalisation (so the newcomer reads no feature at start-up).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "runtime/run_context.h"

namespace gradshare::train {

struct JoinInfo {
  std::string run_path;
  std::int32_t size = 0;  // the job's processes, spares excluded
  data::Normalization normalization;
};

// {run path: string, size: i32, normalisation: u8[]}
std::vector<std::uint8_t> join_info(const runtime::RunContext& context);
// Throws RuntimeError when malformed.
JoinInfo parse_join_info(std::span<const std::uint8_t> bytes);

}  // namespace gradshare::train
