// ring_frame_test.cpp: the ring frame format: wrapping, and rejection of garbage and torn state.
#include "comm/ring_frame.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace gradshare::comm {
namespace {

std::vector<std::uint8_t> bytes_of(const std::string& text) {
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

// A ring in local memory with a writer that appends frames.
struct TestRing {
  explicit TestRing(std::size_t capacity) : memory(capacity) {}
  void write(const std::vector<std::uint8_t>& payload) {
    build_frame(payload, tail, frame);
    copy_into_ring(memory.data(), memory.size(), tail, frame);
    tail += frame.size();
  }
  std::vector<std::string> read() {
    std::vector<std::string> out;
    consume_frames(memory.data(), memory.size(), head, tail, scratch,
                   [&](std::span<const std::uint8_t> m) { out.emplace_back(m.begin(), m.end()); });
    return out;
  }
  std::vector<std::uint8_t> memory;
  std::vector<std::uint8_t> frame;
  std::vector<std::uint8_t> scratch;
  std::uint64_t head = 0;
  std::uint64_t tail = 0;
};

TEST(RingFrame, Sizes) {
  EXPECT_EQ(ring_capacity(4099), 4096u);
  EXPECT_EQ(ring_max_payload(64), 56u);
  EXPECT_EQ(frame_bytes(0), 8u);
  EXPECT_EQ(frame_bytes(1), 16u);
  EXPECT_EQ(frame_bytes(8), 16u);
  EXPECT_EQ(frame_bytes(9), 24u);
}

TEST(RingFrame, PiecesSplitAtTheEnd) {
  auto whole = ring_pieces(64, 128 + 8, 16);
  EXPECT_EQ(whole[0].ring_offset, 8u);
  EXPECT_EQ(whole[0].length, 16u);
  EXPECT_EQ(whole[1].length, 0u);
  auto split = ring_pieces(64, 56, 24);
  EXPECT_EQ(split[0].ring_offset, 56u);
  EXPECT_EQ(split[0].length, 8u);
  EXPECT_EQ(split[1].ring_offset, 0u);
  EXPECT_EQ(split[1].source_offset, 8u);
  EXPECT_EQ(split[1].length, 16u);
}

TEST(RingFrame, RoundTripAcrossManyLapsWithWrappedPayloads) {
  TestRing ring(64);
  std::vector<std::string> sent;
  for (int i = 0; i < 200; ++i) {
    std::string text(static_cast<std::size_t>(i % 41), static_cast<char>('a' + i % 26));
    text += std::to_string(i);
    if (frame_bytes(text.size()) > ring.memory.size() - (ring.tail - ring.head)) {
      auto got = ring.read();
      ASSERT_EQ(got.size(), sent.size());
      EXPECT_EQ(got, sent);
      sent.clear();
    }
    ring.write(bytes_of(text));
    sent.push_back(text);
  }
  EXPECT_EQ(ring.read(), sent);
  EXPECT_EQ(ring.head, ring.tail);
  EXPECT_GT(ring.tail, 50u * 64u);  // many laps, so frames wrapped in every possible place
}

TEST(RingFrame, EmptyAndFullRingMessages) {
  TestRing ring(64);
  ring.write({});
  EXPECT_EQ(ring.read(), (std::vector<std::string>{""}));
  std::vector<std::uint8_t> full(ring_max_payload(64), 7);
  ring.head = ring.tail = 24;  // an empty ring mid-lap: the full-size frame must wrap
  ring.write(full);
  auto got = ring.read();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], std::string(full.begin(), full.end()));
}

TEST(RingFrame, ZeroedMemoryIsNotAFrame) {
  TestRing ring(64);
  ring.tail = 16;  // a tail pointing at bytes nobody wrote
  EXPECT_THROW(ring.read(), FrameError);
}

TEST(RingFrame, StaleFrameFromAnEarlierLapIsRejected) {
  TestRing ring(64);
  ring.write(bytes_of("old"));
  ring.read();
  // The same ring position one lap later still holds the old frame: a tail claiming new data
  // there must not resurrect it.
  ring.head = 64;
  ring.tail = 64 + 16;
  EXPECT_THROW(ring.read(), FrameError);
}

TEST(RingFrame, GarbageLengthIsRejected) {
  TestRing ring(64);
  ring.write(bytes_of("hello"));
  std::uint32_t huge = 1u << 30;
  std::memcpy(ring.memory.data(), &huge, 4);
  EXPECT_THROW(ring.read(), FrameError);
}

TEST(RingFrame, FrameRunningPastTheTailIsRejected) {
  TestRing ring(64);
  ring.write(bytes_of("twelve bytes"));  // 24-byte frame
  ring.tail -= 8;                        // a tail published before the whole frame
  try {
    ring.read();
    FAIL() << "a frame past the tail was delivered";
  } catch (const FrameError& e) {
    EXPECT_NE(std::string(e.what()).find("past the tail"), std::string::npos) << e.what();
  }
}

TEST(RingFrame, ImpossibleCountersAreRejected) {
  TestRing ring(64);
  ring.head = 16;
  ring.tail = 8;
  EXPECT_THROW(ring.read(), FrameError);  // backwards
  ring.head = 0;
  ring.tail = 72;
  EXPECT_THROW(ring.read(), FrameError);  // more than a ring ahead
  ring.tail = 12;
  EXPECT_THROW(ring.read(), FrameError);  // torn / unaligned
}

TEST(RingFrame, ThrowingHandlerDoesNotSeeTheFrameAgain) {
  TestRing ring(64);
  ring.write(bytes_of("first"));
  ring.write(bytes_of("second"));
  int calls = 0;
  EXPECT_THROW(consume_frames(ring.memory.data(), 64, ring.head, ring.tail, ring.scratch,
                              [&](std::span<const std::uint8_t>) {
                                ++calls;
                                throw std::runtime_error("handler failed");
                              }),
               std::runtime_error);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(ring.read(), (std::vector<std::string>{"second"}));
}

}  // namespace
}  // namespace gradshare::comm
