#include "data/element.h"

#include <cstring>
#include <sstream>

namespace mr {

const char* rtype_name(RType t) noexcept {
  switch (t) {
    case RType::integer:
      return "integer";
    case RType::logical:
      return "logical";
    case RType::dbl:
      break;
  }
  return "double";
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "(";
  for (size_t k = 0; k < shape.size(); ++k) {
    if (k) os << ", ";
    if (shape[k] < 0)
      os << "None";
    else
      os << shape[k];
  }
  if (shape.size() == 1) os << ",";
  os << ")";
  return os.str();
}

std::string spec_string(const ElementSpec& spec) {
  if (!spec.known) return "<unknown until iterated>";
  std::ostringstream os;
  os << "(";
  for (size_t k = 0; k < spec.parts.size(); ++k) {
    if (k) os << ", ";
    if (spec.names && k < spec.names->size() && !(*spec.names)[k].empty())
      os << (*spec.names)[k] << ": ";
    os << rtype_name(spec.parts[k].rtype) << shape_string(spec.parts[k].shape);
  }
  os << ")";
  return os.str();
}

namespace {
inline uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}
}  // namespace

// Eight bytes at a time through a 64-bit mixer: fast enough to fingerprint
// the arrays of a source (hundreds of MB/s) when a file cache needs it.
void Hasher::bytes(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h_ = mix(h_ ^ w) + 0x9E3779B97F4A7C15ull;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p + i, n - i);
  h_ = mix(h_ ^ tail ^ (static_cast<uint64_t>(n) << 56));
}

void Hasher::u64(uint64_t v) { bytes(&v, sizeof v); }

void Hasher::str(const std::string& s) {
  u64(s.size());
  bytes(s.data(), s.size());
}

}  // namespace mr
