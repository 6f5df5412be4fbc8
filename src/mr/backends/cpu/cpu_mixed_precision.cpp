// Mixed precision on the CPU (issue 14, i14-mpcore): the loss-scaling ops,
// the casts to bf16 / f16 and the 16-bit products (oneDNN's bf16 matmul on
// AMX / AVX512-BF16; elsewhere a plain reference loop, which layers do not
// use: they compute in f32 where native_lowp() says no). Non-finite tests
// look at the exponent bits, so that no compiler option on floating-point
// semantics can fold them away.
#include <atomic>
#include <cstring>

#include "backends/common/loss_scale_math.h"
#include "backends/cpu/cpu_backend.h"
#include "core/error.h"

namespace mr {

namespace {

constexpr int64_t kGrain = 16384;

// Round to nearest, ties to even, on the bits (what the hardware's
// conversions do); NaN stays a quiet NaN.
inline uint16_t to_bf16(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((b >> 16) | 0x40u);
  b += 0x7fffu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}

inline float from_bf16(uint16_t h) {
  const uint32_t b = static_cast<uint32_t>(h) << 16;
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// IEEE binary16, round to nearest even, overflow to Inf, subnormals kept.
inline uint16_t to_f16(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  const uint32_t sign = (b >> 16) & 0x8000u;
  const uint32_t abs = b & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: Inf
  if (abs < 0x38800000u) {
    // Subnormal (or zero) in f16: value / 2^-24, rounded to nearest even.
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25: 0
    // v = mant * 2^(e - 150), so v / 2^-24 = mant >> (126 - e), 14 <= s <= 24.
    const uint32_t e = abs >> 23, mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t s = 126u - e;
    const uint32_t q = mant >> s, rem = mant & ((1u << s) - 1u), half = 1u << (s - 1u);
    const uint32_t r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t h = ((abs - 0x38000000u) >> 13);  // rebias 127 -> 15, drop 13 bits
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry may reach Inf: right
  return static_cast<uint16_t>(sign | h);
}

inline float from_f16(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t b;
  if (e == 0x1fu) {
    b = sign | 0x7f800000u | (mant << 13);
  } else if (e != 0) {
    b = sign | ((e + 112u) << 23) | (mant << 13);
  } else {
    // Subnormal: mant * 2^-24, exact in f32.
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    std::memcpy(&b, &v, sizeof b);
    b |= sign;
  }
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

void require_lowp(DType t, const char* op) {
  MR_CHECK(t == DType::bf16 || t == DType::f16, value, op, ": dtype ", dtype_name(t),
           " is not a 16-bit float type (expected bfloat16 or float16)");
}

inline bool nonfinite(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return (b & 0x7f800000u) == 0x7f800000u;
}

}  // namespace

void CpuBackend::nonfinite_flag(int64_t n, const float* x, float* flag) {
  if (n <= 0) return;
  std::atomic<bool> any{false};
  cpu::for_range(team_, n, kGrain, [&](int64_t b, int64_t e) {
    // An OR of exponent tests: no early exit, so the loop vectorises.
    bool found = false;
    for (int64_t i = b; i < e; ++i) found |= nonfinite(x[i]);
    if (found) any.store(true, std::memory_order_relaxed);
  });
  if (any.load()) *flag = 1.0f;
}

void CpuBackend::unscale_gradients(int64_t n, float* g, const StepScalars* s) {
  const float scale = s->loss_scale;
  cpu::for_range(team_, n, kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) g[i] = g[i] / scale;
  });
}

void CpuBackend::advance_loss_scale(const LossScaleAdvance& a) {
  MR_CHECK(a.block != nullptr && a.word != nullptr && a.table != nullptr && a.table_rows > 0 &&
               a.growth_steps >= 1,
           internal, "advance_loss_scale: incomplete operands");
  loss_scale::advance(a);
}

}  // namespace mr

namespace mr {

void CpuBackend::cast_lowp(DType t, int64_t n, const float* src, void* dst) {
  require_lowp(t, "cast_lowp");
  auto* d = static_cast<uint16_t*>(dst);
  const bool bf = t == DType::bf16;
  cpu::for_range(team_, n, kGrain, [&](int64_t b, int64_t e) {
    if (bf)
      for (int64_t i = b; i < e; ++i) d[i] = to_bf16(src[i]);
    else
      for (int64_t i = b; i < e; ++i) d[i] = to_f16(src[i]);
  });
}

bool CpuBackend::native_lowp(DType t) const {
#if MR_WITH_DNNL
  return dnnl_matmul_native(t);
#else
  (void)t;
  return false;
#endif
}

void CpuBackend::prepare_lowp(DType t) {
#if MR_WITH_DNNL
  if (t == DType::bf16 && native_lowp(t) && !dnnl_bf16_) dnnl_bf16_ = make_dnnl_matmul(t);
#else
  (void)t;
#endif
}

void CpuBackend::gemm_lowp(DType t, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                           float alpha, const void* a, int64_t lda, const void* b, int64_t ldb,
                           float beta, float* c, int64_t ldc) {
  require_lowp(t, "gemm_lowp");
  if (m <= 0 || n <= 0) return;
#if MR_WITH_DNNL
  if (t == DType::bf16 && dnnl_bf16_ && k > 0 &&
      dnnl_matmul_run(*dnnl_bf16_, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                      team_.size()))
    return;
#endif
  // The reference: each product of two 16-bit values is exact in f32, so this
  // is the native path's arithmetic up to the order of the sums.
  const auto* pa = static_cast<const uint16_t*>(a);
  const auto* pb = static_cast<const uint16_t*>(b);
  const bool bf = t == DType::bf16;
  auto widen = [bf](uint16_t h) { return bf ? from_bf16(h) : from_f16(h); };
  cpu::for_range(team_, m, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (int64_t p = 0; p < k; ++p)
          acc += widen(trans_a ? pa[p * lda + i] : pa[i * lda + p]) *
                 widen(trans_b ? pb[j * ldb + p] : pb[p * ldb + j]);
        float& out = c[i * ldc + j];
        out = alpha * acc + (beta == 0.0f ? 0.0f : beta * out);
      }
  });
}

}  // namespace mr
