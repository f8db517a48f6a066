// byte_io.cpp: ByteWriter / ByteReader.
#include "comm/byte_io.h"

#include "core/errors.h"

namespace gradshare::comm {

void ByteWriter::append(const void* data, std::size_t length) {
  if (length == 0) return;
  const auto* first = static_cast<const std::uint8_t*>(data);
  bytes_.insert(bytes_.end(), first, first + length);
}

ByteWriter& ByteWriter::put_string(std::string_view text) {
  put<std::uint64_t>(text.size());
  append(text.data(), text.size());
  return *this;
}

void ByteReader::copy_out(void* out, std::size_t length) {
  if (length > remaining())
    fail("need " + std::to_string(length) + " bytes at offset " + std::to_string(offset_) + ", " +
         std::to_string(remaining()) + " left");
  if (length > 0) std::memcpy(out, bytes_.data() + offset_, length);
  offset_ += length;
}

std::size_t ByteReader::get_count(std::size_t element_bytes) {
  auto count = get<std::uint64_t>();
  if (element_bytes > 0 && count > remaining() / element_bytes)
    fail("a count of " + std::to_string(count) + " elements of " + std::to_string(element_bytes) +
         " bytes at offset " + std::to_string(offset_) + ", " + std::to_string(remaining()) +
         " bytes left");
  return static_cast<std::size_t>(count);
}

std::string ByteReader::get_string() {
  std::size_t length = get_count(1);
  std::string text(length, '\0');
  copy_out(text.data(), length);
  return text;
}

void ByteReader::expect_end() const {
  if (remaining() != 0)
    fail(std::to_string(remaining()) + " unexpected bytes after offset " + std::to_string(offset_));
}

bool ByteReader::get_bool() {
  std::uint8_t raw = 0;
  copy_out(&raw, 1);
  if (raw > 1)
    fail("byte " + std::to_string(raw) + " at offset " + std::to_string(offset_ - 1) +
         " is not a bool");
  return raw == 1;
}

void ByteReader::fail(const std::string& detail) const {
  throw core::RuntimeError("malformed " + what_ + ": " + detail);
}

}  // namespace gradshare::comm
