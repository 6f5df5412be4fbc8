// Mixed precision on the CPU (issue 14, i14-mpcore): the loss-scaling ops.
// Non-finite tests look at the exponent bits, so that no compiler option on
// floating-point semantics can fold them away.
#include <atomic>
#include <cstring>

#include "backends/cpu/cpu_backend.h"

namespace mr {

namespace {

constexpr int64_t kGrain = 16384;

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

}  // namespace mr
