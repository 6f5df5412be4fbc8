#include "data/finite_check.h"

#include <cmath>
#include <cstring>

namespace mr {

namespace {
constexpr uint32_t kExponent = 0x7f800000u;
constexpr int64_t kBlock = 512;  // floats per vectorized block (2 KiB)

// The largest exponent field of a block: kExponent iff the block holds a
// NaN or an Inf. A max over integers vectorizes without reassociating floats.
uint32_t max_exponent(const float* p, int64_t n) {
  uint32_t m = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, p + i, sizeof(bits));
    const uint32_t e = bits & kExponent;
    m = e > m ? e : m;
  }
  return m;
}
}  // namespace

int64_t first_non_finite(const float* p, int64_t n) {
  for (int64_t at = 0; at < n; at += kBlock) {
    const int64_t len = n - at < kBlock ? n - at : kBlock;
    if (max_exponent(p + at, len) != kExponent) continue;
    for (int64_t i = 0; i < len; ++i)
      if (!std::isfinite(p[at + i])) return at + i;
  }
  return -1;
}

const char* non_finite_name(float v) {
  if (std::isnan(v)) return "a NaN";
  return v > 0 ? "an Inf" : "a -Inf";
}

}  // namespace mr
