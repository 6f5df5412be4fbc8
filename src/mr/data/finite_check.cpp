#include "data/finite_check.h"

#include <cmath>
#include <cstring>

namespace mr {

namespace {
constexpr uint32_t kExponent = 0x7f800000u;
constexpr int64_t kBlock = 512;  // floats per vectorized block (2 KiB)

// Nonzero iff a block holds a NaN or an Inf (an exponent field of all
// ones). Integer compares and ORs vectorize on any x86-64 (SSE2) without
// reassociating floats; the full blocks have a compile-time trip count,
// which lets GCC's cheap vectorizer (-O2) take the loop too.
template <int64_t N>
uint32_t any_non_finite_fixed(const float* p) {
  uint32_t m = 0;
  for (int64_t i = 0; i < N; ++i) {
    uint32_t bits;
    std::memcpy(&bits, p + i, sizeof(bits));
    m |= (bits & kExponent) == kExponent ? ~0u : 0u;
  }
  return m;
}

uint32_t any_non_finite(const float* p, int64_t n) {
  if (n == kBlock) return any_non_finite_fixed<kBlock>(p);
  uint32_t m = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, p + i, sizeof(bits));
    m |= (bits & kExponent) == kExponent ? ~0u : 0u;
  }
  return m;
}
}  // namespace

int64_t first_non_finite(const float* p, int64_t n) {
  for (int64_t at = 0; at < n; at += kBlock) {
    const int64_t len = n - at < kBlock ? n - at : kBlock;
    if (any_non_finite(p + at, len) == 0) continue;
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
