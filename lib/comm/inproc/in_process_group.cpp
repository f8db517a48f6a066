// in_process_group.cpp: InProcessGroupHub and its members.
#include "comm/inproc/in_process_group.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "core/errors.h"

namespace gradshare::comm {

namespace {

template <typename T, typename Combine>
InProcessGroupHub::Reduce elementwise(Combine combine) {
  return [combine](const std::vector<std::span<std::uint8_t>>& buffers,
                   std::vector<std::uint8_t>& result) {
    const std::size_t count = buffers.front().size() / sizeof(T);
    for (const auto& buffer : buffers)
      GS_CHECK(buffer.size() == count * sizeof(T), "all-reduce of different lengths");
    std::vector<T> values(count);
    std::memcpy(values.data(), buffers.front().data(), count * sizeof(T));
    for (std::size_t m = 1; m < buffers.size(); ++m)
      for (std::size_t i = 0; i < count; ++i) {
        T other;
        std::memcpy(&other, buffers[m].data() + i * sizeof(T), sizeof(T));
        values[i] = combine(values[i], other);
      }
    result.resize(count * sizeof(T));
    std::memcpy(result.data(), values.data(), result.size());
  };
}

template <typename T>
std::span<std::uint8_t> as_bytes(std::span<T> values) {
  return {reinterpret_cast<std::uint8_t*>(values.data()), values.size_bytes()};
}

class InProcessWorkerGroup : public WorkerGroup {
 public:
  InProcessWorkerGroup(InProcessGroupHub& hub, int index) : hub_(hub), index_(index) {}
  int index() const override { return index_; }
  int size() const override { return hub_.size(); }
  void allreduce_sum(std::span<float> values) override {
    hub_.collective(index_, as_bytes(values),
                    elementwise<float>([](float a, float b) { return a + b; }));
  }
  void allreduce_max(std::span<std::int32_t> values) override {
    hub_.collective(index_, as_bytes(values),
                    elementwise<std::int32_t>([](auto a, auto b) { return std::max(a, b); }));
  }
  void allreduce_max(std::span<std::uint64_t> values) override {
    hub_.collective(index_, as_bytes(values),
                    elementwise<std::uint64_t>([](auto a, auto b) { return std::max(a, b); }));
  }
  void broadcast(std::span<std::uint8_t> bytes, int root) override {
    hub_.collective(index_, bytes, [root](const auto& buffers, std::vector<std::uint8_t>& result) {
      const auto& from = buffers[static_cast<std::size_t>(root)];
      result.assign(from.begin(), from.end());
    });
  }
  void barrier() override {
    hub_.collective(index_, {},
                    [](const auto&, std::vector<std::uint8_t>& result) { result.clear(); });
  }

 private:
  InProcessGroupHub& hub_;
  int index_;
};

}  // namespace

InProcessGroupHub::InProcessGroupHub(int size, double timeout_seconds, Check interrupt)
    : size_(size),
      timeout_seconds_(timeout_seconds),
      interrupt_(std::move(interrupt)),
      buffers_(static_cast<std::size_t>(size)) {
  GS_CHECK(size > 0, "an in-process group of " + std::to_string(size) + " members");
  for (int m = 0; m < size; ++m)
    members_.push_back(std::make_unique<InProcessWorkerGroup>(*this, m));
}

InProcessGroupHub::~InProcessGroupHub() = default;

WorkerGroup& InProcessGroupHub::member(int index) {
  GS_CHECK(index >= 0 && index < size_,
           "member " + std::to_string(index) + " of a group of " + std::to_string(size_));
  return *members_[static_cast<std::size_t>(index)];
}

void InProcessGroupHub::collective(int index, std::span<std::uint8_t> bytes, const Reduce& reduce) {
  std::unique_lock lock(mutex_);
  const auto check = [&] {
    if (interrupt_) try {
        interrupt_();
      } catch (...) {
        // The others must not reduce this member's buffer: it is gone with the exception.
        broken_ = true;
        arrived_all_.notify_all();
        throw;
      }
    GS_CHECK(!broken_, "a collective on an in-process group that a failure broke");
  };
  check();
  buffers_[static_cast<std::size_t>(index)] = bytes;
  const std::uint64_t generation = generation_;
  if (++arrived_ == size_) {
    // Every member is here, so every member has copied the previous result out.
    reduce(buffers_, result_);
    arrived_ = 0;
    ++generation_;
    arrived_all_.notify_all();
  } else {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(timeout_seconds_));
    // In slices, so that a failure elsewhere interrupts the wait.
    while (generation_ == generation) {
      check();
      if (std::chrono::steady_clock::now() >= deadline)
        throw core::RuntimeError("timed out after " + std::to_string(timeout_seconds_) +
                                 " s waiting for every member of the in-process group");
      arrived_all_.wait_for(lock, std::chrono::milliseconds(20));
    }
  }
  GS_CHECK(result_.size() == bytes.size(), "all-reduce of different lengths");
  std::copy(result_.begin(), result_.end(), bytes.begin());
}

}  // namespace gradshare::comm
