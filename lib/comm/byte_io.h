// byte_io.h: ByteWriter / ByteReader, the serialisation of control-plane payloads (PODs,
// vectors of PODs, strings) in native byte order (a job runs on one architecture). The reader
// bounds-checks everything: a short or malformed message throws RuntimeError, never reads past
// the end and never allocates more than the message could hold.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace gradshare::comm {

template <typename T>
concept Pod = std::is_trivially_copyable_v<T> && !std::is_pointer_v<T>;

class ByteWriter {
 public:
  template <Pod T>
  ByteWriter& put(const T& value) {
    append(&value, sizeof(T));
    return *this;
  }
  // Element count (uint64) followed by the elements.
  template <Pod T>
  ByteWriter& put_vector(std::span<const T> values) {
    static_assert(!std::is_same_v<T, bool>, "std::vector<bool> has no contiguous storage");
    put<std::uint64_t>(values.size());
    append(values.data(), values.size_bytes());
    return *this;
  }
  template <Pod T>
  ByteWriter& put_vector(const std::vector<T>& values) {
    return put_vector(std::span<const T>(values));
  }
  ByteWriter& put_string(std::string_view text);

  std::span<const std::uint8_t> bytes() const { return bytes_; }
  std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  void append(const void* data, std::size_t length);
  std::vector<std::uint8_t> bytes_;
};

class ByteReader {
 public:
  // `what` names the message in errors ("truncated partition grant: ...").
  explicit ByteReader(std::span<const std::uint8_t> bytes, std::string what = "message")
      : bytes_(bytes), what_(std::move(what)) {}

  template <Pod T>
  T get() {
    if constexpr (std::is_same_v<T, bool>) {
      return get_bool();
    } else {
      T value;
      copy_out(&value, sizeof(T));
      return value;
    }
  }
  template <Pod T>
  std::vector<T> get_vector() {
    static_assert(!std::is_same_v<T, bool>, "std::vector<bool> has no contiguous storage");
    std::size_t count = get_count(sizeof(T));
    std::vector<T> values(count);
    copy_out(values.data(), count * sizeof(T));
    return values;
  }
  std::string get_string();

  std::size_t remaining() const { return bytes_.size() - offset_; }
  // Reads an element count and checks that many elements of at least `element_bytes` each can
  // still follow (so a forged count cannot make the reader allocate without bound).
  std::size_t get_count(std::size_t element_bytes);
  // Throws when bytes are left over (a message longer than its reader expects is malformed too).
  void expect_end() const;

 private:
  void copy_out(void* out, std::size_t length);
  bool get_bool();
  [[noreturn]] void fail(const std::string& detail) const;

  std::span<const std::uint8_t> bytes_;
  std::size_t offset_ = 0;
  std::string what_;
};

}  // namespace gradshare::comm
