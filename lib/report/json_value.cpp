// json_value.cpp: parse_json, a recursive-descent reader of RFC 8259 JSON (see json_value.h).
#include "report/json_value.h"

#include <cstdint>
#include <cstdlib>
#include <fstream>

namespace gradshare::report {

JsonValue JsonValue::boolean(bool value) {
  JsonValue v;
  v.type_ = Type::kBool;
  v.bool_ = value;
  return v;
}

JsonValue JsonValue::number(double value) {
  JsonValue v;
  v.type_ = Type::kNumber;
  v.number_ = value;
  return v;
}

JsonValue JsonValue::string(std::string value) {
  JsonValue v;
  v.type_ = Type::kString;
  v.string_ = std::move(value);
  return v;
}

JsonValue JsonValue::array(std::vector<JsonValue> items) {
  JsonValue v;
  v.type_ = Type::kArray;
  v.items_ = std::move(items);
  return v;
}

JsonValue JsonValue::object(std::vector<std::string> keys, std::vector<JsonValue> values) {
  JsonValue v;
  v.type_ = Type::kObject;
  v.keys_ = std::move(keys);
  v.items_ = std::move(values);
  return v;
}

const JsonValue* JsonValue::find(std::string_view key) const {
  for (std::size_t i = keys_.size(); i-- > 0;)
    if (keys_[i] == key) return &items_[i];
  return nullptr;
}

std::optional<double> JsonValue::number_at(std::string_view key) const {
  const JsonValue* value = find(key);
  if (!value || value->type_ != Type::kNumber) return std::nullopt;
  return value->number_;
}

std::optional<std::string> JsonValue::string_at(std::string_view key) const {
  const JsonValue* value = find(key);
  if (!value || value->type_ != Type::kString) return std::nullopt;
  return value->string_;
}

namespace {

// Nesting deeper than this is refused rather than recursed into.
constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  JsonValue document() {
    JsonValue value = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw JsonError(what, pos_ + 1); }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r' || text_[pos_] == '\n'))
      ++pos_;
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void expect(char c, const char* what) {
    if (peek() != c) fail(std::string("expected ") + what);
    ++pos_;
  }

  void literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) fail("invalid literal (expected " + std::string(word) + ")");
    pos_ += word.size();
  }

  JsonValue parse_value(int depth) {
    skip_space();
    if (at_end()) fail("unexpected end of line (a value was expected)");
    switch (peek()) {
      case '{': return parse_object(depth + 1);
      case '[': return parse_array(depth + 1);
      case '"': return JsonValue::string(parse_string());
      case 't': literal("true"); return JsonValue::boolean(true);
      case 'f': literal("false"); return JsonValue::boolean(false);
      case 'n': literal("null"); return JsonValue{};
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return JsonValue::number(parse_number());
        fail(std::string("unexpected character '") + peek() + "'");
    }
  }

  JsonValue parse_object(int depth) {
    if (depth > kMaxDepth) fail("nested too deeply");
    ++pos_;  // '{'
    std::vector<std::string> keys;
    std::vector<JsonValue> values;
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return JsonValue::object(std::move(keys), std::move(values));
    }
    for (;;) {
      skip_space();
      if (peek() != '"') fail("expected a member name in double quotes");
      keys.push_back(parse_string());
      skip_space();
      expect(':', "':' after a member name");
      values.push_back(parse_value(depth));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}', "',' or '}' in an object");
      return JsonValue::object(std::move(keys), std::move(values));
    }
  }

  JsonValue parse_array(int depth) {
    if (depth > kMaxDepth) fail("nested too deeply");
    ++pos_;  // '['
    std::vector<JsonValue> items;
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return JsonValue::array(std::move(items));
    }
    for (;;) {
      items.push_back(parse_value(depth));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']', "',' or ']' in an array");
      return JsonValue::array(std::move(items));
    }
  }

  bool digit() const { return peek() >= '0' && peek() <= '9'; }

  double parse_number() {
    const std::size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (digit()) {
      while (digit()) ++pos_;
    } else {
      fail("invalid number");
    }
    if (peek() == '.') {
      ++pos_;
      if (!digit()) fail("invalid number (digits expected after '.')");
      while (digit()) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!digit()) fail("invalid number (digits expected in the exponent)");
      while (digit()) ++pos_;
    }
    const std::string digits(text_.substr(start, pos_ - start));
    return std::strtod(digits.c_str(), nullptr);
  }

  unsigned hex4() {
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = peek();
      value <<= 4;
      if (c >= '0' && c <= '9') value |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') value |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') value |= static_cast<unsigned>(c - 'A' + 10);
      else fail("invalid \\u escape (4 hex digits expected)");
      ++pos_;
    }
    return value;
  }

  static void append_utf8(std::string& out, std::uint32_t code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  std::string parse_string() {
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      if (at_end()) fail("unterminated string");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t code = hex4();
          if (code >= 0xD800 && code < 0xDC00 && text_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            const std::uint32_t low = hex4();
            if (low < 0xDC00 || low >= 0xE000) fail("invalid UTF-16 surrogate pair");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, code);
          break;
        }
        default:
          --pos_;
          fail("invalid escape in a string");
      }
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

JsonValue parse_json(std::string_view text) { return Parser(text).document(); }

std::vector<JsonValue> read_records(const std::string& path) {
  std::vector<JsonValue> records;
  std::ifstream file(path);
  for (std::string line; std::getline(file, line);) {
    try {
      records.push_back(parse_json(line));
    } catch (const JsonError&) {
      // a record cut short: not one
    }
  }
  return records;
}

}  // namespace gradshare::report
