#include "data/sample_reader.h"

#include <algorithm>
#include <utility>

#include "core/errors.h"
#include "core/timer.h"

namespace gradshare::data {

namespace {
// How far ahead of the batch being trained features are read: the memory read ahead holds.
constexpr std::size_t kReadAheadBatches = 32;
}  // namespace

SampleReader::SampleReader(RowFile file, std::vector<std::uint32_t> rows,
                           Normalization normalization)
    : file_(std::move(file)), rows_(std::move(rows)), normalization_(normalization) {}

SampleReader::~SampleReader() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SampleReader::read_rows(std::span<const std::uint32_t> indices, float* x) const {
  const std::size_t width = file_.row_values();
  for (std::size_t k = 0; k < indices.size(); ++k) {
    GS_CHECK(indices[k] < rows_.size(), "sample index out of range");
    file_.read(rows_[indices[k]], 1, x + k * width);
  }
  if (normalization_.offset == 0.0f && normalization_.scale == 1.0f) return;
  for (std::size_t i = 0; i < indices.size() * width; ++i)
    x[i] = (x[i] - normalization_.offset) * normalization_.scale;
}

void SampleReader::read(std::span<const std::uint32_t> indices, float* x) {
  std::unique_lock lock(mutex_);
  const auto match = std::find_if(queue_.begin(), queue_.end(), [&](const auto& batch) {
    return std::equal(batch->indices.begin(), batch->indices.end(), indices.begin(), indices.end());
  });
  if (match == queue_.end()) {
    ++stats_.batches_missed;
    ++stats_.batches_unqueued;
    lock.unlock();
    read_rows(indices, x);
    return;
  }
  const auto batch = *match;
  queue_.erase(queue_.begin(), match + 1);  // older batches were given up (a partition lost)
  changed_.notify_all();                     // the window moved on
  using State = Batch::State;
  if (batch->state == State::kQueued) {  // not started (the window had not reached it): read here
    ++stats_.batches_missed;
    lock.unlock();
    read_rows(indices, x);
    return;
  }
  if (batch->state == State::kReady) {
    ++stats_.batches_ready;
  } else if (batch->state == State::kReading) {
    ++stats_.batches_waited;
    core::Stopwatch waited;
    changed_.wait(lock, [&] {
      return batch->state == State::kReady || batch->state == State::kFailed || stopping_;
    });
    stats_.seconds_waited += waited.seconds();
  }
  const bool ready = batch->state == State::kReady;
  lock.unlock();
  if (!ready) {  // the background read failed: read here, where its error surfaces
    read_rows(indices, x);
    return;
  }
  std::copy(batch->features.begin(), batch->features.end(), x);
}

void SampleReader::read_ahead(std::vector<std::vector<std::uint32_t>> batches) {
  {
    std::lock_guard lock(mutex_);
    for (auto& indices : batches) {
      auto batch = std::make_shared<Batch>();
      batch->indices = std::move(indices);
      queue_.push_back(std::move(batch));
    }
    if (!thread_.joinable()) thread_ = std::thread([this] { background(); });
  }
  changed_.notify_all();
}

std::size_t SampleReader::queued() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

ReadAheadStats SampleReader::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void SampleReader::background() {
  using State = Batch::State;
  std::unique_lock lock(mutex_);
  for (;;) {
    std::shared_ptr<Batch> next;
    changed_.wait(lock, [&] {
      if (stopping_) return true;
      const auto window = queue_.begin() + static_cast<std::ptrdiff_t>(
                                                std::min(queue_.size(), kReadAheadBatches));
      const auto queued = std::find_if(queue_.begin(), window, [](const auto& batch) {
        return batch->state == State::kQueued;
      });
      if (queued == window) return false;
      next = *queued;
      return true;
    });
    if (stopping_) return;
    next->state = State::kReading;
    lock.unlock();
    std::vector<float> features(next->indices.size() * file_.row_values());
    bool read = true;
    try {
      read_rows(next->indices, features.data());
    } catch (const std::exception&) {
      read = false;  // read() reads the batch again on the training thread and reports the error
    }
    lock.lock();
    next->features = std::move(features);
    next->state = read ? State::kReady : State::kFailed;
    changed_.notify_all();
  }
}

}  // namespace gradshare::data
