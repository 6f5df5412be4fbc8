#include "core/json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace mr {

// ---------------------------------------------------------------------------
// Parser: nlohmann's (iterative, so deep text cannot exhaust the stack); the
// depth limit is enforced in its callback, and its exceptions are translated
// into one plain description per kind of mistake.
namespace {

struct TooDeep {};

bool number_char(char c) {
  return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
}

// Calls fn(i) for each byte i of text[0, end) outside string literals (and
// for each opening quote) until fn returns true; returns that i, or
// std::string::npos.
template <typename Fn>
size_t scan_outside_strings(const std::string& s, size_t end, Fn fn) {
  bool in_string = false;
  for (size_t i = 0; i < end && i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (fn(i)) return i;
    in_string = c == '"';
  }
  return std::string::npos;
}

// Offset of the first number token in s[0, end) for which bad(token) holds.
template <typename Bad>
size_t find_number(const std::string& s, size_t end, Bad bad) {
  return scan_outside_strings(s, end, [&](size_t i) {
    const char c = s[i];
    if (!(c == '-' || (c >= '0' && c <= '9'))) return false;
    if (i > 0 && number_char(s[i - 1])) return false;  // not the token's start
    size_t j = i;
    while (j < s.size() && number_char(s[j])) ++j;
    return bad(s.substr(i, j - i));
  });
}

bool has_leading_zero(const std::string& token) {
  const size_t k = token[0] == '-' ? 1 : 0;
  return token.size() > k + 1 && token[k] == '0' && token[k + 1] >= '0' && token[k + 1] <= '9';
}

// Offset of the first value nested deeper than max_depth (the parser
// callback's depth: the number of arrays and objects around it).
size_t too_deep_offset(const std::string& s, int max_depth) {
  int depth = 0;
  const size_t at = scan_outside_strings(s, s.size(), [&](size_t i) {
    const char c = s[i];
    if (c == ']' || c == '}') {
      --depth;
      return false;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':') return false;
    if (depth > max_depth) return true;
    if (c == '[' || c == '{') ++depth;
    return false;
  });
  return at == std::string::npos ? s.size() : at;
}

bool has(const std::string& msg, const char* part) { return msg.find(part) != std::string::npos; }

// A plain description of nlohmann's parse_error 101 message (see
// parser::exception_message: "syntax error while parsing <context> - <what
// was found>; expected <what was expected>").
const char* describe(const std::string& msg) {
  if (has(msg, "missing closing quote")) return "unterminated string";
  if (has(msg, "control character")) return "control character in string";
  if (has(msg, "surrogate")) return "lone surrogate escape";
  if (has(msg, "must be followed by 4 hex digits")) return "bad \\u escape";
  if (has(msg, "forbidden character after backslash")) return "unknown escape";
  if (has(msg, "ill-formed UTF-8")) return "invalid UTF-8 in string";
  if (has(msg, "; expected end of input")) return "unexpected text after the JSON value";
  if (has(msg, "invalid number")) return "malformed number";
  if (has(msg, "unexpected end of input")) return "unexpected end of text";
  if (has(msg, "parsing object key")) return "expected a string key";
  if (has(msg, "parsing object separator")) return "expected ':'";
  if (has(msg, "parsing object -")) return "expected ',' or '}'";
  if (has(msg, "parsing array -")) return "expected ',' or ']'";
  return "expected a value";
}

[[noreturn]] void invalid(const std::string& what, size_t at, const char* msg) {
  fail(ErrorKind::io, what, ": invalid JSON at byte ", at, ": ", msg);
}

}  // namespace

Json parse_json(const std::string& text, const std::string& what, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes)
    fail(ErrorKind::io, what, ": JSON text of ", text.size(), " bytes exceeds the limit of ",
         limits.max_bytes);
  const int max_depth = limits.max_depth;
  // depth: 0 for the top-level value, +1 inside each array or object.
  const Json::parser_callback_t check_depth = [max_depth](int depth, Json::parse_event_t event,
                                                          Json&) {
    if (depth > max_depth &&
        (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start ||
         event == Json::parse_event_t::value))
      throw TooDeep{};
    return true;
  };
  try {
    return Json::parse(text, check_depth, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const TooDeep&) {
    invalid(what, too_deep_offset(text, max_depth), "nesting deeper than the limit");
  } catch (const nlohmann::json::parse_error& e) {
    const std::string msg = e.what();
    const size_t at = e.byte > 0 ? e.byte - 1 : 0;  // e.byte counts the bytes read
    if (has(msg, "unexpected number literal")) {
      // "01": nlohmann reads 0 and then 1 as a second number.
      const size_t zero = find_number(text, e.byte, has_leading_zero);
      if (zero != std::string::npos) invalid(what, zero, "leading zero");
    }
    invalid(what, at, describe(msg));
  } catch (const nlohmann::json::out_of_range& e) {
    // 406: a number beyond a double (nlohmann gives no position).
    const size_t at = find_number(text, text.size(), [](const std::string& t) {
      return !std::isfinite(std::strtod(t.c_str(), nullptr));
    });
    invalid(what, at == std::string::npos ? 0 : at, "number out of range");
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::io, what, ": invalid JSON: ", e.what());
  }
}

// ---------------------------------------------------------------------------
// Writer: Python's json.dumps with its defaults.
namespace {

void write_string(std::string& out, const std::string& s) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    char buf[16];
    if (c < 0x20 || c == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      continue;
    }
    // Decode one UTF-8 sequence and escape it as Python's ensure_ascii does;
    // invalid bytes become U+FFFD.
    unsigned cp = 0xFFFD;
    int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (len > 0 && i + static_cast<size_t>(len) <= s.size()) {
      unsigned v = c & (0x3F >> (len - 1));
      bool ok = true;
      for (int k = 1; k < len; ++k) {
        const unsigned char d = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
        if ((d & 0xC0) != 0x80) ok = false;
        v = (v << 6) | (d & 0x3F);
      }
      if (ok) {
        cp = v;
        i += static_cast<size_t>(len - 1);
      }
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
    } else {
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
    }
    out += buf;
  }
  out += '"';
}

void write_value(std::string& out, const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      out += "null";
      return;
    case Json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      return;
    case Json::value_t::number_integer:
      out += std::to_string(v.get<int64_t>());
      return;
    case Json::value_t::number_unsigned:
      out += std::to_string(v.get<uint64_t>());
      return;
    case Json::value_t::number_float:
      out += python_float_repr(v.get<double>());
      return;
    case Json::value_t::string:
      write_string(out, v.get_ref<const std::string&>());
      return;
    case Json::value_t::array: {
      out += '[';
      bool first = true;
      for (const Json& x : v) {
        if (!first) out += ", ";
        first = false;
        write_value(out, x);
      }
      out += ']';
      return;
    }
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& m : v.items()) {
        if (!first) out += ", ";
        first = false;
        write_string(out, m.key());
        out += ": ";
        write_value(out, m.value());
      }
      out += '}';
      return;
    }
    case Json::value_t::binary:
    case Json::value_t::discarded:
      break;
  }
  fail(ErrorKind::value, "cannot write a JSON value of type ", v.type_name(), " as text");
}

}  // namespace

std::string to_json(const Json& value) {
  std::string out;
  write_value(out, value);
  return out;
}

std::string python_float_repr(double v) {
  MR_CHECK(std::isfinite(v), value, "cannot write the non-finite number ", v, " as JSON");
  if (v == 0.0) return std::signbit(v) ? "-0.0" : "0.0";
  // Shortest %.{p}e that reads back exactly.
  char buf[40];
  for (int p = 0; p < 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*e", p, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s(buf);
  const size_t epos = s.find('e');
  std::string mant = s.substr(0, epos);
  const int exp = std::atoi(s.c_str() + epos + 1);
  const bool neg = mant[0] == '-';
  std::string digits;
  for (char c : mant)
    if (c >= '0' && c <= '9') digits += c;
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int n = static_cast<int>(digits.size());
  std::string out;
  if (exp >= -4 && exp < 16) {  // Python's repr: fixed notation for 1e-4 <= |v| < 1e16
    if (exp >= 0) {
      if (n > exp + 1)
        out = digits.substr(0, static_cast<size_t>(exp + 1)) + "." +
              digits.substr(static_cast<size_t>(exp + 1));
      else
        out = digits + std::string(static_cast<size_t>(exp + 1 - n), '0') + ".0";
    } else {
      out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (n > 1) out += "." + digits.substr(1);
    // A double's decimal exponent has at most 3 digits; the buffer fits any int.
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += e;
  }
  return neg ? "-" + out : out;
}

}  // namespace mr
