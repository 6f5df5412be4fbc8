// CPU ops of Keras' Normalization layer: element-wise over a rows x cols
// view with per-column mean and variance (backends/common/layer_norm_math.h).
#include "backends/common/layer_norm_math.h"
#include "backends/cpu/cpu_backend.h"

namespace mr {

void CpuBackend::normalize_columns(int64_t rows, int64_t cols, const float* x, const float* mean,
                                   const float* var, bool invert, float* y) {
  cpu::for_rows(team_, rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const float s = lnorm::feature_scale(var[c]);
        const float v = x[r * cols + c];
        y[r * cols + c] = invert ? mean[c] + v * s : (v - mean[c]) / s;
      }
  });
}

void CpuBackend::normalize_columns_backward(int64_t rows, int64_t cols, const float* dy,
                                            const float* var, bool invert, float* dx) {
  cpu::for_rows(team_, rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const float s = lnorm::feature_scale(var[c]);
        dx[r * cols + c] = invert ? dy[r * cols + c] * s : dy[r * cols + c] / s;
      }
  });
}

}  // namespace mr
