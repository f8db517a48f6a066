// sharing/encoding_debug.h: the per-worker records of logging.encoding_debug (gradient sharing), for
// tuning the threshold encoding. One metrics.jsonl record per worker report (every
// logging.every_steps of the worker's steps):
//   {"kind":"encoding_debug","rank","step" (the master's), "steps" (covered), "tau_min",
//    "tau_max","sparsity" (mean entries / n per message),"messages","sparse","bitmap",
//    "compressed" (messages per index format),"capped","backpressure","bytes",
//    "bytes_per_step","residual_l2","residual_max_abs","clipped_mass","shake_ups",
//    "staleness_mean","staleness_max"}
#pragma once

#include <cstdint>

#include "report/metrics_log.h"
#include "train/sharing/report.h"

namespace gradshare::train {

report::JsonLine encoding_debug_record(int rank, std::int64_t master_step, const SharingReport& report);

}  // namespace gradshare::train
