// The index and cast ops of traced graphs on the CPU (contracts: core/
// backend.h, "i15-ops"; formulas: common/index_math.h, shared with CUDA).
// Work is split over the team by (o, i) outputs; each output is computed by
// one thread in the order the contract states, so the results do not depend
// on the team size and equal CUDA's bit for bit.
#include "backends/common/index_math.h"
#include "backends/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/op_kinds.h"

namespace mr {

void CpuBackend::one_hot(int64_t outer, int64_t classes, int64_t inner, const float* x, float* y) {
  check_axis_view(outer, classes, inner, "one_hot");
  const int64_t n = outer * classes * inner;
  if (n <= 0) return;
  cpu::for_range(team_, n, cpu::kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const int64_t i = p % inner, c = (p / inner) % classes, o = p / (classes * inner);
      y[p] = indexmath::one_hot_value(x[o * inner + i], c);
    }
  });
}

void CpuBackend::argmax(int64_t outer, int64_t extent, int64_t inner, const float* x, float* y) {
  check_axis_view(outer, extent, inner, "argmax");
  const int64_t n = outer * inner;
  if (n <= 0) return;
  MR_CHECK(extent >= 1, internal, "argmax: an empty axis has no argmax");
  cpu::for_range(team_, n, cpu::kElementwiseGrain / extent + 1, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      const int64_t o = j / inner, i = j - o * inner;
      y[j] = static_cast<float>(indexmath::argmax_one(extent, inner, x + o * extent * inner + i));
    }
  });
}

void CpuBackend::take_along_axis(int64_t outer, int64_t n, int64_t k, int64_t inner, const float* x,
                                 const float* idx, float* y) {
  check_axis_view(outer, k, inner, "take_along_axis");
  const int64_t total = outer * k * inner;
  if (total <= 0) return;
  // Checked first, in order, so the error names the first bad index and y
  // is left unwritten.
  for (int64_t p = 0; p < total; ++p)
    MR_CHECK(indexmath::take_index(idx[p], n) >= 0, value, "take_along_axis: index ", idx[p],
             " at position ", p, " is not an integer in [", -n, ", ", n - 1, "]");
  cpu::for_range(team_, total, cpu::kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const int64_t i = p % inner, o = p / (k * inner);
      y[p] = x[(o * n + indexmath::take_index(idx[p], n)) * inner + i];
    }
  });
}

void CpuBackend::take_along_axis_backward(int64_t outer, int64_t n, int64_t k, int64_t inner,
                                          const float* idx, const float* dy, float* dx) {
  check_axis_view(outer, n, inner, "take_along_axis_backward");
  MR_CHECK(k >= 0, internal, "take_along_axis_backward: k = ", k);
  fill(outer * n * inner, dx, 0.0f);
  if (outer * k * inner <= 0 || n <= 0) return;
  // Per o, every dx[o, e, i] receives its terms in increasing j (the i loop
  // inside j only interleaves different elements), as CUDA's per-element loop.
  cpu::for_range(team_, outer, cpu::kElementwiseGrain / (k * inner) + 1, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o)
      for (int64_t j = 0; j < k; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t p = (o * k + j) * inner + i;
          const int64_t t = indexmath::take_index(idx[p], n);
          if (t >= 0) dx[(o * n + t) * inner + i] += dy[p];
        }
  });
}

void CpuBackend::cast_values(CastOp op, int64_t n, const float* x, float* y) {
  check_op(op, "cast_values");
  if (n <= 0) return;
  cpu::for_range(team_, n, cpu::kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = indexmath::cast_value(op, x[i]);
  });
}

}  // namespace mr
