// JSON: parsing (strict), serialization as Python's json.dumps writes it,
// and Python's float repr.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "io/json.h"

namespace mr {
namespace {

TEST(Json, RoundTripsKerasLikeText) {
  const std::string text =
      R"({"module": "keras.layers", "class_name": "Dense", "config": {"units": 8, "lr": 0.0010000000474974513, )"
      R"("eps": 1e-07, "rate": 0.2, "one": 1.0, "shape": [null, 784], "ok": true, "no": false, "s": "a\"b\\c\n", "e": {}, "a": []}})";
  const Json v = parse_json(text, "t");
  EXPECT_EQ(to_json(v), text);
  const Json* cfg = v.find("config");
  ASSERT_NE(cfg, nullptr);
  EXPECT_TRUE(cfg->find("units")->is_integer());
  EXPECT_EQ(cfg->find("units")->as_integer(), 8);
  EXPECT_FALSE(cfg->find("one")->is_integer());
  EXPECT_DOUBLE_EQ(cfg->find("lr")->as_number(), 0.0010000000474974513);
  EXPECT_TRUE(cfg->find("shape")->items()[0].is_null());
}

TEST(Json, PythonFloatRepr) {
  EXPECT_EQ(python_float_repr(0.001), "0.001");
  EXPECT_EQ(python_float_repr(1e-7), "1e-07");
  EXPECT_EQ(python_float_repr(1.0), "1.0");
  EXPECT_EQ(python_float_repr(0.0001), "0.0001");
  EXPECT_EQ(python_float_repr(1e16), "1e+16");
  EXPECT_EQ(python_float_repr(123456789012345.0), "123456789012345.0");
  EXPECT_EQ(python_float_repr(-2.5), "-2.5");
  EXPECT_EQ(python_float_repr(static_cast<double>(0.001f)), "0.0010000000474974513");
  EXPECT_EQ(python_float_repr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_THROW(python_float_repr(1.0 / 0.0), Error);
}

TEST(Json, UnicodeEscapes) {
  const Json v = parse_json(R"("caf\u00e9 \ud83d\ude00")", "t");
  EXPECT_EQ(v.as_string(), "caf\xc3\xa9 \xf0\x9f\x98\x80");
  EXPECT_EQ(to_json(v), R"("caf\u00e9 \ud83d\ude00")");
}

void expect_bad(const std::string& text, const std::string& fragment, JsonLimits lim = {}) {
  try {
    parse_json(text, "config.json in m.keras", lim);
    FAIL() << "accepted: " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("config.json in m.keras"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  }
}

TEST(Json, RejectsMalformedText) {
  expect_bad("", "unexpected end");
  expect_bad("{\"a\": 1,}", "expected a string key");
  expect_bad("[1, 2,]", "expected a value");
  expect_bad("{\"a\" 1}", "expected ':'");
  expect_bad("NaN", "expected a value");
  expect_bad("01", "leading zero");
  expect_bad("\"a\nb\"", "control character");
  expect_bad("\"\\ud800\"", "surrogate");
  expect_bad("{} x", "after the JSON value");
  expect_bad("[1e999]", "out of range");
  expect_bad("\"abc", "unterminated");
  expect_bad("// c\n{}", "expected a value");
}

TEST(Json, EnforcesDepthAndSizeLimits) {
  std::string deep(100000, '[');
  expect_bad(deep, "nesting deeper");
  JsonLimits small;
  small.max_bytes = 10;
  expect_bad("[1, 2, 3, 4, 5, 6]", "exceeds the limit", small);
  JsonLimits shallow;
  shallow.max_depth = 2;
  EXPECT_NO_THROW(parse_json("[[1]]", "t", shallow));
  expect_bad("[[[1]]]", "nesting deeper", shallow);
}

TEST(Json, BuildsAndEditsValues) {
  Json o = Json::object();
  o.set("b", Json::integer(2));
  o.set("a", Json::array({Json(), Json::boolean(true), Json::number(0.5)}));
  o.set("b", Json::string("x"));
  EXPECT_EQ(to_json(o), R"({"b": "x", "a": [null, true, 0.5]})");
  EXPECT_THROW(o.as_string(), Error);
}

}  // namespace
}  // namespace mr
