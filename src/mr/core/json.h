// JSON for the .keras archive's config.json / metadata.json and mirrored's
// own members: the value type and the strict parser are nlohmann-json's
// (ordered_json: objects keep their key order, as Python's json module writes
// them and Keras compares them; integer literals stay integers, so 10 and 10.0
// survive a round trip). The writer is ours: Keras' files are what Python's
// json.dumps writes — floats as Python's repr (1e-07, 0.001, 1.0),
// separators ", " and ": ", non-ASCII as \uXXXX (ensure_ascii) — and
// nlohmann's dump() produces none of the three.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"

namespace mr {

using Json = nlohmann::ordered_json;

struct JsonLimits {
  size_t max_bytes = size_t{64} << 20;  // the whole text
  int max_depth = 256;                  // nesting of arrays and objects
};

// Parses exactly one JSON value (surrounding whitespace allowed). Throws
// mr::Error (io) naming `what` (e.g. "config.json in model.keras"), the byte
// offset of the first problem and what is wrong. Rejects trailing commas,
// comments, NaN and Infinity, leading zeros, raw control characters in
// strings, lone surrogate escapes, numbers beyond a double, and text beyond
// the limits. A duplicated key keeps its first position and its last value
// (as Python's json does).
Json parse_json(const std::string& text, const std::string& what, const JsonLimits& limits = {});

// One line with Python's default separators (", " and ": "); non-ASCII
// characters are written as \uXXXX escapes (surrogate pairs beyond the BMP),
// integers as integer literals, floats as Python's repr. A non-finite number
// throws mr::Error (value): strict JSON has no NaN.
std::string to_json(const Json& value);

// Python's repr() of a double (shortest text that reads back exactly; a whole
// number keeps its ".0").
std::string python_float_repr(double v);

// v.get<T>(), with nlohmann's type error turned into mr::Error (value) naming
// `what` (e.g. "units of layer dense_1").
template <typename T>
T json_get(const Json& v, const std::string& what) {
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::value, what, ": JSON value of type ", v.type_name(), " does not convert (",
         e.what(), ")");
  }
}

}  // namespace mr
