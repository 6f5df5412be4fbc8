#include "io/json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace mr {

Json Json::boolean(bool b) {
  Json j;
  j.type_ = Type::boolean;
  j.bool_ = b;
  return j;
}
Json Json::number(double v) {
  Json j;
  j.type_ = Type::number;
  j.num_ = v;
  return j;
}
Json Json::integer(int64_t v) {
  Json j;
  j.type_ = Type::number;
  j.integer_ = true;
  j.int_ = v;
  j.num_ = static_cast<double>(v);
  return j;
}
Json Json::string(std::string s) {
  Json j;
  j.type_ = Type::string;
  j.str_ = std::move(s);
  return j;
}
Json Json::array(std::vector<Json> items) {
  Json j;
  j.type_ = Type::array;
  j.items_ = std::move(items);
  return j;
}
Json Json::object(std::vector<std::pair<std::string, Json>> members) {
  Json j;
  j.type_ = Type::object;
  j.members_ = std::move(members);
  return j;
}

bool Json::as_bool() const {
  MR_CHECK(type_ == Type::boolean, value, "JSON value is not a boolean");
  return bool_;
}
double Json::as_number() const {
  MR_CHECK(type_ == Type::number, value, "JSON value is not a number");
  return num_;
}
int64_t Json::as_integer() const {
  MR_CHECK(is_integer(), value, "JSON value is not an integer");
  return int_;
}
const std::string& Json::as_string() const {
  MR_CHECK(type_ == Type::string, value, "JSON value is not a string");
  return str_;
}
const std::vector<Json>& Json::items() const {
  MR_CHECK(type_ == Type::array, value, "JSON value is not an array");
  return items_;
}
const std::vector<std::pair<std::string, Json>>& Json::members() const {
  MR_CHECK(type_ == Type::object, value, "JSON value is not an object");
  return members_;
}
const Json* Json::find(const std::string& key) const {
  if (type_ != Type::object) return nullptr;
  for (auto it = members_.rbegin(); it != members_.rend(); ++it)
    if (it->first == key) return &it->second;
  return nullptr;
}
void Json::push_back(Json v) {
  MR_CHECK(type_ == Type::array, internal, "push_back on a JSON non-array");
  items_.push_back(std::move(v));
}
void Json::set(const std::string& key, Json v) {
  MR_CHECK(type_ == Type::object, internal, "set on a JSON non-object");
  for (auto& m : members_)
    if (m.first == key) {
      m.second = std::move(v);
      return;
    }
  members_.emplace_back(key, std::move(v));
}

// ---------------------------------------------------------------------------
// Parser: recursive descent over the bytes; depth is bounded by the limits,
// so hostile nesting cannot exhaust the stack.
namespace {

class Parser {
 public:
  Parser(const std::string& text, const std::string& what, const JsonLimits& lim)
      : s_(text), what_(what), lim_(lim) {}

  Json run() {
    if (s_.size() > lim_.max_bytes)
      fail(ErrorKind::io, what_, ": JSON text of ", s_.size(), " bytes exceeds the limit of ",
           lim_.max_bytes);
    ws();
    Json v = value(0);
    ws();
    if (i_ != s_.size()) error("unexpected text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void error(const char* msg) {
    fail(ErrorKind::io, what_, ": invalid JSON at byte ", i_, ": ", msg);
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool lit(const char* word) {
    const size_t n = std::strlen(word);
    if (s_.compare(i_, n, word) != 0) return false;
    i_ += n;
    return true;
  }
  Json value(int depth) {
    if (depth > lim_.max_depth) error("nesting deeper than the limit");
    if (i_ >= s_.size()) error("unexpected end of text");
    const char c = s_[i_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return Json::string(str());
    if (c == '-' || (c >= '0' && c <= '9')) return num();
    if (lit("true")) return Json::boolean(true);
    if (lit("false")) return Json::boolean(false);
    if (lit("null")) return Json();
    error("expected a value");
  }
  Json object(int depth) {
    ++i_;  // '{'
    Json obj = Json::object();
    ws();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return obj;
    }
    std::vector<std::pair<std::string, Json>> members;
    for (;;) {
      ws();
      if (i_ >= s_.size() || s_[i_] != '"') error("expected a string key");
      std::string key = str();
      ws();
      if (i_ >= s_.size() || s_[i_] != ':') error("expected ':'");
      ++i_;
      ws();
      members.emplace_back(std::move(key), value(depth + 1));
      ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return Json::object(std::move(members));
      }
      error("expected ',' or '}'");
    }
  }
  Json array(int depth) {
    ++i_;  // '['
    std::vector<Json> items;
    ws();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return Json::array();
    }
    for (;;) {
      ws();
      items.push_back(value(depth + 1));
      ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return Json::array(std::move(items));
      }
      error("expected ',' or ']'");
    }
  }
  unsigned hex4() {
    if (i_ + 4 > s_.size()) error("truncated \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<unsigned>(c - 'A' + 10);
      else
        error("bad hex digit in \\u escape");
    }
    return v;
  }
  static void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  std::string str() {
    ++i_;  // opening quote
    std::string out;
    for (;;) {
      if (i_ >= s_.size()) error("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return out;
      }
      if (c < 0x20) error("control character in string");
      if (c != '\\') {
        out += static_cast<char>(c);
        ++i_;
        continue;
      }
      ++i_;
      if (i_ >= s_.size()) error("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (i_ + 2 > s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u')
              error("lone high surrogate");
            i_ += 2;
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) error("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            error("lone low surrogate");
          }
          utf8(out, cp);
          break;
        }
        default:
          error("unknown escape");
      }
    }
  }
  Json num() {
    const size_t start = i_;
    bool integer = true;
    if (s_[i_] == '-') ++i_;
    if (i_ >= s_.size()) error("truncated number");
    if (s_[i_] == '0') {
      ++i_;
      if (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') error("leading zero");
    } else if (s_[i_] >= '1' && s_[i_] <= '9') {
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    } else {
      error("expected a digit");
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      integer = false;
      ++i_;
      if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') error("expected a digit after '.'");
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      integer = false;
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') error("expected an exponent");
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    }
    const std::string text = s_.substr(start, i_ - start);
    if (integer && text.size() <= 18) return Json::integer(std::strtoll(text.c_str(), nullptr, 10));
    const double v = std::strtod(text.c_str(), nullptr);
    if (!std::isfinite(v)) error("number out of range");
    return Json::number(v);
  }

  const std::string& s_;
  const std::string& what_;
  const JsonLimits& lim_;
  size_t i_ = 0;
};

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
    case Json::Type::null:
      out += "null";
      return;
    case Json::Type::boolean:
      out += v.as_bool() ? "true" : "false";
      return;
    case Json::Type::number:
      if (v.is_integer())
        out += std::to_string(v.as_integer());
      else
        out += python_float_repr(v.as_number());
      return;
    case Json::Type::string:
      write_string(out, v.as_string());
      return;
    case Json::Type::array: {
      out += '[';
      bool first = true;
      for (const Json& x : v.items()) {
        if (!first) out += ", ";
        first = false;
        write_value(out, x);
      }
      out += ']';
      return;
    }
    case Json::Type::object: {
      out += '{';
      bool first = true;
      for (const auto& m : v.members()) {
        if (!first) out += ", ";
        first = false;
        write_string(out, m.first);
        out += ": ";
        write_value(out, m.second);
      }
      out += '}';
      return;
    }
  }
}

}  // namespace

Json parse_json(const std::string& text, const std::string& what, const JsonLimits& limits) {
  return Parser(text, what, limits).run();
}

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
