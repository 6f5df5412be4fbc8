// JSON: parsing (strict), serialization as Python's json.dumps writes it,
// and Python's float repr.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "core/json.h"

namespace mr {
namespace {

TEST(Json, RoundTripsKerasLikeText) {
  const std::string text =
      R"({"module": "keras.layers", "class_name": "Dense", "config": {"units": 8, "lr": 0.0010000000474974513, )"
      R"("eps": 1e-07, "rate": 0.2, "one": 1.0, "shape": [null, 784], "ok": true, "no": false, "s": "a\"b\\c\n", "e": {}, "a": []}})";
  const Json v = parse_json(text, "t");
  EXPECT_EQ(to_json(v), text);
  const Json* cfg = v.contains("config") ? &v.at("config") : nullptr;
  ASSERT_NE(cfg, nullptr);
  EXPECT_TRUE(cfg->at("units").is_number_integer());
  EXPECT_EQ(cfg->at("units").get<int64_t>(), 8);
  EXPECT_FALSE(cfg->at("one").is_number_integer());
  EXPECT_DOUBLE_EQ(cfg->at("lr").get<double>(), 0.0010000000474974513);
  EXPECT_TRUE(cfg->at("shape").at(0).is_null());
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
  EXPECT_EQ(v.get<std::string>(), "caf\xc3\xa9 \xf0\x9f\x98\x80");
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
  o["b"] = Json(2);
  o["a"] = Json::array({Json(), Json(true), Json(0.5)});
  o["b"] = Json("x");
  EXPECT_EQ(to_json(o), R"({"b": "x", "a": [null, true, 0.5]})");
  EXPECT_THROW(json_get<std::string>(o, "o"), Error);
}

TEST(Json, KeepsIntegersAndFloatsApart) {
  const Json v = parse_json("[10, 10.0, -3, 18446744073709551615, 1e2]", "t");
  EXPECT_TRUE(v.at(0).is_number_integer());
  EXPECT_TRUE(v.at(1).is_number_float());
  EXPECT_EQ(to_json(v), "[10, 10.0, -3, 18446744073709551615, 100.0]");
  EXPECT_EQ(to_json(Json(int64_t{-7})), "-7");
}

TEST(Json, DuplicateKeysKeepTheLastValue) {
  // As Python's json: the first position, the last value.
  const Json v = parse_json(R"({"a": 1, "b": 2, "a": 3})", "t");
  EXPECT_EQ(to_json(v), R"({"a": 3, "b": 2})");
}

TEST(Json, NamesTheByteOfTheProblem) {
  auto message = [](const std::string& text, JsonLimits lim = {}) {
    try {
      parse_json(text, "w", lim);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("[1, 2,]").find("at byte 6"), std::string::npos);
  EXPECT_NE(message("[0, 01]").find("at byte 4: leading zero"), std::string::npos);
  EXPECT_NE(message(R"(["1e999", 1e999])").find("at byte 10: number out of range"),
            std::string::npos);
  JsonLimits shallow;
  shallow.max_depth = 2;
  EXPECT_NE(message(R"([1, ["[["], [[2]]])", shallow).find("at byte 14: nesting deeper"),
            std::string::npos);
}

}  // namespace
}  // namespace mr
