// json_value.h: a minimal JSON reader for the records of metrics.jsonl. parse_json(text) gives a
// JsonValue tree (null, bool, number, string, array, object); malformed text throws JsonError
// saying what is wrong and at which column.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gradshare::report {

class JsonError : public std::runtime_error {
 public:
  JsonError(const std::string& message, std::size_t column)
      : std::runtime_error(message), column_(column) {}
  // 1-based column of the character the reader stopped at.
  std::size_t column() const { return column_; }

 private:
  std::size_t column_;
};

class JsonValue {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  JsonValue() = default;
  static JsonValue boolean(bool value);
  static JsonValue number(double value);
  static JsonValue string(std::string value);
  static JsonValue array(std::vector<JsonValue> items);
  static JsonValue object(std::vector<std::string> keys, std::vector<JsonValue> values);

  Type type() const { return type_; }
  bool is_object() const { return type_ == Type::kObject; }
  // A boolean's or string's value (false or "" for other types).
  bool as_bool() const { return bool_; }
  const std::string& as_string() const { return string_; }
  // Array elements, or object values in the order they were written.
  const std::vector<JsonValue>& items() const { return items_; }

  // An object's member (the last one of that name), or nullptr.
  const JsonValue* find(std::string_view key) const;
  // A member that is a number / string, if there is one.
  std::optional<double> number_at(std::string_view key) const;
  std::optional<std::string> string_at(std::string_view key) const;

 private:
  Type type_ = Type::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> items_;
  std::vector<std::string> keys_;
};

// One complete JSON value (surrounding white space allowed); JsonError otherwise.
JsonValue parse_json(std::string_view text);

// Every record of the metrics.jsonl at `path` (none when it is missing), skipping a line that
// is not one: a record a lost master left cut short.
std::vector<JsonValue> read_records(const std::string& path);

}  // namespace gradshare::report
