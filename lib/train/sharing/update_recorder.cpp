#include "train/sharing/update_recorder.h"

#include <cstdlib>
#include <string>

#include "core/errors.h"
#include "core/log.h"

namespace gradshare::train {

UpdateRecorder::UpdateRecorder(std::size_t parameter_count) {
  const char* path = std::getenv("GRADSHARE_RECORD_UPDATES");
  if (!path || !*path) return;
  const char* steps = std::getenv("GRADSHARE_RECORD_STEPS");
  steps_left_ = steps ? std::atoll(steps) : 300;
  file_ = std::fopen(path, "wb");
  if (!file_) throw core::UserError(std::string(path) + ": cannot open GRADSHARE_RECORD_UPDATES file");
  const std::uint64_t n = parameter_count;
  std::fwrite(&n, sizeof n, 1, file_);
  core::log_info("recording the first " + std::to_string(steps_left_) + " update vectors to " + path);
}

UpdateRecorder::~UpdateRecorder() {
  if (file_) std::fclose(file_);
}

void UpdateRecorder::record(std::span<const float> update) {
  if (!file_ || steps_left_ <= 0) return;
  if (std::fwrite(update.data(), sizeof(float), update.size(), file_) != update.size())
    throw core::RuntimeError("GRADSHARE_RECORD_UPDATES: write failed");
  if (--steps_left_ == 0) {
    std::fclose(file_);
    file_ = nullptr;
  }
}

}  // namespace gradshare::train
