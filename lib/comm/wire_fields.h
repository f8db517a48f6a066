// wire_fields.h: payloads that name their fields, written and read field by field in that order
// so that a message's wire form is stated once, by its field list:
//
//   struct Done {
//     std::uint64_t last_seq = 0;
//     std::vector<float> parameters;
//     static auto fields(auto& self) { return std::tie(self.last_seq, self.parameters); }
//   };
//
// A field is a POD (its bytes, as ByteWriter::put), a std::string, a std::vector of PODs, or a
// payload of its own (one with fields, or with write(ByteWriter&) / static read(ByteReader&)).
// A bool travels as one byte; reading any other value than 0 or 1 throws, as ByteReader does.
#pragma once

#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "comm/byte_io.h"

namespace gradshare::comm {

template <typename T>
concept WithFields = requires(T& payload, const T& constant) {
  T::fields(payload);
  T::fields(constant);
};

template <typename T>
concept SelfSerializing = requires(const T& payload, ByteWriter& writer, ByteReader& reader) {
  payload.write(writer);
  { T::read(reader) } -> std::same_as<T>;
};

namespace detail {
template <typename T>
inline constexpr bool kIsVector = false;
template <typename T>
inline constexpr bool kIsVector<std::vector<T>> = true;
}  // namespace detail

template <WithFields T>
void write_fields(ByteWriter& writer, const T& payload);
template <WithFields T>
T read_fields(ByteReader& reader);

template <typename T>
void put_field(ByteWriter& writer, const T& value) {
  if constexpr (std::is_same_v<T, std::string>)
    writer.put_string(value);
  else if constexpr (detail::kIsVector<T>)
    writer.put_vector(value);
  else if constexpr (WithFields<T>)
    write_fields(writer, value);
  else if constexpr (SelfSerializing<T>)
    value.write(writer);
  else
    writer.put(value);
}

template <typename T>
void get_field(ByteReader& reader, T& value) {
  if constexpr (std::is_same_v<T, std::string>)
    value = reader.get_string();
  else if constexpr (detail::kIsVector<T>)
    value = reader.template get_vector<typename T::value_type>();
  else if constexpr (WithFields<T>)
    value = read_fields<T>(reader);
  else if constexpr (SelfSerializing<T>)
    value = T::read(reader);
  else
    value = reader.template get<T>();
}

template <WithFields T>
void write_fields(ByteWriter& writer, const T& payload) {
  std::apply([&](const auto&... field) { (put_field(writer, field), ...); }, T::fields(payload));
}

template <WithFields T>
T read_fields(ByteReader& reader) {
  T payload{};
  std::apply([&](auto&... field) { (get_field(reader, field), ...); }, T::fields(payload));
  return payload;
}

// A payload's wire form, whichever way it states it; a trivially copyable struct with neither
// travels as its bytes (reports of counters and figures).
template <typename T>
concept Payload = WithFields<T> || SelfSerializing<T> || Pod<T>;

template <Payload T>
void write_payload(ByteWriter& writer, const T& payload) {
  put_field(writer, payload);
}

template <Payload T>
T read_payload(ByteReader& reader) {
  T payload{};
  get_field(reader, payload);
  return payload;
}

}  // namespace gradshare::comm
