// Per-element formulas of the index and cast ops of traced graphs (core/
// backend.h, "i15-ops": one_hot, argmax, take_along_axis, cast_values), shared by the
// CPU and CUDA backends (MR_HD): one formula, two backends, the same bits.
#pragma once

#include <math.h>

#include <cstdint>
#include <cstring>

#include "backends/common/nan_math.h"
#include "core/hd.h"
#include "core/op_kinds.h"

namespace mr {
namespace indexmath {

MR_HD uint32_t bits_of(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
#endif
}

MR_HD float float_of(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
#endif
}

// x rounded to bfloat16 (8 mantissa bits; round to nearest even on the 16
// dropped bits, overflow to +-Inf by the carry into the exponent), NaN kept.
MR_HD float round_bf16(float x) {
  if (nanmath::is_nan(x)) return x;
  uint32_t u = bits_of(x);
  u += 0x7fffu + ((u >> 16) & 1u);
  return float_of(u & 0xffff0000u);
}

// x rounded to IEEE binary16 and widened back: 11 significant bits (round to
// nearest even on the 13 dropped bits) for |x| >= 2^-14; below, the half
// subnormals' fixed quantum 2^-24 (x * 2^24 is exact, rintf rounds it to
// nearest even in the default mode); |x| >= 65520 (half way from the largest
// half, 65504, to 2^16, a tie going to the even 2^16) is +-Inf; NaN and Inf
// kept.
MR_HD float round_f16(float x) {
  const uint32_t u = bits_of(x);
  const uint32_t sign = u & 0x80000000u;
  uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) return x;                             // Inf, NaN
  if (a >= 0x477ff000u) return float_of(sign | 0x7f800000u);  // >= 65520
  if (a < 0x38800000u) {                                      // < 2^-14
    const float q = rintf(float_of(a) * 16777216.0f);         // in units of 2^-24
    return float_of(sign | bits_of(q * 5.9604644775390625e-08f));
  }
  a += 0xfffu + ((a >> 13) & 1u);
  return float_of(sign | (a & ~0x1fffu));
}

// Truncation toward zero saturated at [lo, hi], NaN -> 0 (lo, hi: the
// integer type's range as floats; the bounds are exact except int32's and
// int64's upper ones, 2^31 - 1 and 2^63 - 1, which read 2^31 and 2^63).
MR_HD float trunc_sat(float x, float lo, float hi) {
  if (nanmath::is_nan(x)) return 0.0f;
  const float t = truncf(x);
  return (t < lo ? lo : (t > hi ? hi : t)) + 0.0f;  // + 0: -0.4 gives +0, an integer's zero
}

MR_HD float cast_value(CastOp op, float x) {
  switch (op) {
    case CastOp::float16:
      return round_f16(x);
    case CastOp::bfloat16:
      return round_bf16(x);
    case CastOp::int8:
      return trunc_sat(x, -128.0f, 127.0f);
    case CastOp::int16:
      return trunc_sat(x, -32768.0f, 32767.0f);
    case CastOp::int32:
      return trunc_sat(x, -2147483648.0f, 2147483647.0f);
    case CastOp::int64:
      return trunc_sat(x, -9223372036854775808.0f, 9223372036854775807.0f);
    case CastOp::uint8:
      return trunc_sat(x, 0.0f, 255.0f);
    case CastOp::boolean:
      return x != 0.0f ? 1.0f : 0.0f;  // NaN != 0: true
  }
  return x;
}

// one_hot's entry for class c of id x: x truncated toward zero is c (NaN
// matches no class).
MR_HD float one_hot_value(float x, int64_t c) {
  return (!nanmath::is_nan(x) && truncf(x) == static_cast<float>(c)) ? 1.0f : 0.0f;
}

// The first e of x[0], x[stride], .., x[(extent - 1) stride] holding the
// maximum, NaN counting as the maximum (the first NaN wins; numpy's argmax).
// extent >= 1.
MR_HD int64_t argmax_one(int64_t extent, int64_t stride, const float* x) {
  int64_t best = 0;
  float m = x[0];
  if (nanmath::is_nan(m)) return 0;
  for (int64_t e = 1; e < extent; ++e) {
    const float v = x[e * stride];
    if (nanmath::is_nan(v)) return e;
    if (v > m) {
      m = v;
      best = e;
    }
  }
  return best;
}

// The position along an axis of extent n that index v names: v itself for
// 0 <= v < n, v + n for -n <= v < 0 (numpy's negative indices); -1 when v
// is not an integer in [-n, n - 1] (NaN included).
MR_HD int64_t take_index(float v, int64_t n) {
  if (!(v >= -static_cast<float>(n) && v < static_cast<float>(n)) || truncf(v) != v) return -1;
  const auto i = static_cast<int64_t>(v);
  return i < 0 ? i + n : i;
}

}  // namespace indexmath
}  // namespace mr
