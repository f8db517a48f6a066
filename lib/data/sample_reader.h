// sample_reader.h: the training split of partitioned reading (data.read: partitions): a rank
// reads the features of the samples it trains on from the file (row_file.h) instead of holding
// the split in memory, and reads the minibatches it will train next ahead on a background
// thread.
//   read(indices, x)   - the normalised features of training samples `indices`: from a batch
//                        read ahead with exactly these indices (waiting while it is being read),
//                        else read now (counted as a miss: not queued, or not started yet)
//   read_ahead(batches)- queues minibatches to read in the background, in order; batches older
//                        than the one read() takes are dropped with it
// Memory: the features of at most 32 queued batches (the background thread reads no further
// ahead), however many are queued: a worker may queue its whole epoch.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "data/dataset.h"
#include "data/row_file.h"

namespace gradshare::data {

struct ReadAheadStats {
  std::int64_t batches_ready = 0;   // read() found its batch read ahead
  std::int64_t batches_waited = 0;  // ... still being read, and waited for it
  std::int64_t batches_missed = 0;  // not queued or not started: read on the spot
  std::int64_t batches_unqueued = 0;  // ... of which never queued (its partition not read ahead)
  double seconds_waited = 0;
};

class SampleReader {
 public:
  // rows[i]: the file row of training sample i.
  SampleReader(RowFile file, std::vector<std::uint32_t> rows, Normalization normalization);
  ~SampleReader();
  SampleReader(const SampleReader&) = delete;
  SampleReader& operator=(const SampleReader&) = delete;

  const std::string& path() const { return file_.path(); }
  std::size_t size() const { return rows_.size(); }
  std::size_t sample_size() const { return file_.row_values(); }
  void read(std::span<const std::uint32_t> indices, float* x);
  void read_ahead(std::vector<std::vector<std::uint32_t>> batches);
  // Batches queued and not yet taken.
  std::size_t queued() const;
  ReadAheadStats stats() const;

 private:
  struct Batch {
    enum class State : std::uint8_t { kQueued, kReading, kReady, kFailed };
    std::vector<std::uint32_t> indices;
    std::vector<float> features;
    State state = State::kQueued;
  };
  void read_rows(std::span<const std::uint32_t> indices, float* x) const;
  void background();

  const RowFile file_;
  const std::vector<std::uint32_t> rows_;
  const Normalization normalization_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<Batch>> queue_;  // oldest first
  ReadAheadStats stats_;
  bool stopping_ = false;
  std::thread thread_;  // started by the first read_ahead
};

}  // namespace gradshare::data
