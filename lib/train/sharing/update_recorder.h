// sharing/update_recorder.h: records a run's update vectors for the compression report
// (scripts/bench/compression). Active only when GRADSHARE_RECORD_UPDATES=<path> is set; keeps
// the first GRADSHARE_RECORD_STEPS (default 300) steps.
// File format: little-endian uint64 parameter count n, then n float32 per recorded step.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>

namespace gradshare::train {

class UpdateRecorder {
 public:
  // Reads the environment; inactive when the variable is unset.
  explicit UpdateRecorder(std::size_t parameter_count);
  UpdateRecorder(const UpdateRecorder&) = delete;
  UpdateRecorder& operator=(const UpdateRecorder&) = delete;
  ~UpdateRecorder();
  void record(std::span<const float> update);

 private:
  std::FILE* file_ = nullptr;
  std::int64_t steps_left_ = 0;
};

}  // namespace gradshare::train
