// A JSON value, a strict parser and a serializer (RFC 8259), for the .keras
// archive's config.json / metadata.json and mirrored's own members. Objects
// keep their key order (Keras' files are compared member by member and the
// order is what Python's json module writes). Numbers remember whether the
// text was an integer literal, so that 10 and 10.0 survive a round trip.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mr {

class Json {
 public:
  enum class Type { null, boolean, number, string, array, object };

  Json() = default;  // null
  static Json boolean(bool b);
  static Json number(double v);    // written as a float: 1.0, 0.001, 1e-07
  static Json integer(int64_t v);  // written as an integer literal
  static Json string(std::string s);
  static Json array(std::vector<Json> items = {});
  static Json object(std::vector<std::pair<std::string, Json>> members = {});

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::null; }
  bool is_integer() const { return type_ == Type::number && integer_; }
  bool as_bool() const;
  double as_number() const;
  int64_t as_integer() const;  // integer literal only
  const std::string& as_string() const;
  const std::vector<Json>& items() const;
  const std::vector<std::pair<std::string, Json>>& members() const;
  // Member `key` of an object, or nullptr.
  const Json* find(const std::string& key) const;

  void push_back(Json v);                    // array
  void set(const std::string& key, Json v);  // object: replaces or appends

 private:
  Type type_ = Type::null;
  bool bool_ = false;
  bool integer_ = false;
  double num_ = 0.0;
  int64_t int_ = 0;
  std::string str_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
};

struct JsonLimits {
  size_t max_bytes = size_t{64} << 20;  // the whole text
  int max_depth = 256;                  // nesting of arrays and objects
};

// Parses exactly one JSON value (surrounding whitespace allowed). Throws
// mr::Error (io) naming `what` (e.g. "config.json in model.keras") and the byte
// offset of the first problem. Rejects trailing commas, comments, NaN and
// Infinity, leading zeros, raw control characters in strings, lone
// surrogate escapes, and text beyond the limits. A duplicated key is kept
// twice in members(); find() returns the last one (as Python's json does).
Json parse_json(const std::string& text, const std::string& what, const JsonLimits& limits = {});

// One line with Python's default separators (", " and ": "); non-ASCII
// characters are written as \uXXXX escapes (json.dumps' ensure_ascii), floats
// as Python's repr (1e-07, 0.001, 1.0). A non-finite number throws
// mr::Error (value): strict JSON has no NaN.
std::string to_json(const Json& value);

// Python's repr() of a double (shortest text that reads back exactly).
std::string python_float_repr(double v);

}  // namespace mr
