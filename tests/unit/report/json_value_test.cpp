// Tests of the JSON reader behind metrics.jsonl: values, escapes, errors with their column.
#include <gtest/gtest.h>

#include "report/json_value.h"

namespace gradshare::report {
namespace {

TEST(JsonValue, ReadsARecord) {
  const JsonValue v = parse_json(
      R"( {"kind":"step","step":200,"loss":0.25,"ok":true,"none":null,"lost":"[1,3]","a":[1,{"b":-2.5e-3}]} )");
  ASSERT_TRUE(v.is_object());
  EXPECT_EQ(v.string_at("kind"), "step");
  EXPECT_EQ(v.number_at("step"), 200);
  EXPECT_DOUBLE_EQ(*v.number_at("loss"), 0.25);
  EXPECT_EQ(v.find("ok")->type(), JsonValue::Type::kBool);
  EXPECT_TRUE(v.find("ok")->as_bool());
  EXPECT_EQ(v.find("none")->type(), JsonValue::Type::kNull);
  EXPECT_FALSE(v.number_at("none").has_value());  // null is no number
  EXPECT_FALSE(v.number_at("kind").has_value());
  EXPECT_EQ(v.find("missing"), nullptr);
  const JsonValue* a = v.find("a");
  ASSERT_EQ(a->items().size(), 2u);
  EXPECT_DOUBLE_EQ(*a->items()[1].number_at("b"), -2.5e-3);
}

TEST(JsonValue, DecodesEscapes) {
  const JsonValue v = parse_json(R"("a\"b\\c\/\n\t\u00e9\u03c4\ud83d\ude00")");
  EXPECT_EQ(v.as_string(), "a\"b\\c/\n\t\xC3\xA9\xCF\x84\xF0\x9F\x98\x80");
}

TEST(JsonValue, NamesTheColumnOfAnError) {
  const auto column_of = [](const char* text) {
    try {
      parse_json(text);
    } catch (const JsonError& error) {
      return static_cast<int>(error.column());
    }
    return 0;
  };
  EXPECT_EQ(column_of(R"({"kind":"step",})"), 16);   // a name expected
  EXPECT_EQ(column_of(R"({"loss":0.3)"), 12);        // cut off
  EXPECT_EQ(column_of(R"({"loss":01})"), 10);        // leading zero
  EXPECT_EQ(column_of(R"({"a":1} x)"), 9);           // text after the value
  EXPECT_EQ(column_of("\"tab\there\""), 5);          // raw control character
  EXPECT_EQ(column_of(R"({"a":tru})"), 6);
  EXPECT_EQ(column_of(""), 1);
  EXPECT_EQ(column_of(std::string(100, '[').c_str()), 65);  // nesting limit
}

}  // namespace
}  // namespace gradshare::report
