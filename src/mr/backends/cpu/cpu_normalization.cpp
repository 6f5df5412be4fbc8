// CPU batch-normalization ops. Columns are split over the team and each
// column is reduced over all rows in row order, in double: the result does
// not depend on the team size. Rows are the outer loop so the inner loop
// streams a contiguous row segment of a block of columns.
#include "backends/common/batch_norm_math.h"
#include "backends/cpu/cpu_backend.h"

namespace mr {

namespace {

constexpr int64_t kBlock = 64;  // columns per accumulator block (on the stack)

int64_t column_grain(int64_t rows, int64_t cols) {
  return rows * cols < cpu::kRowwiseMinWork ? (cols > 0 ? cols : 1) : 16;
}

}  // namespace

void CpuBackend::column_moments(int64_t rows, int64_t cols, const float* x, const float* mean,
                                float scale, float* out) {
  cpu::for_range(team_, cols, column_grain(rows, cols), [&](int64_t c0, int64_t c1) {
    for (int64_t b0 = c0; b0 < c1; b0 += kBlock) {
      const int64_t b1 = b0 + kBlock < c1 ? b0 + kBlock : c1;
      double acc[kBlock] = {};
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        if (mean == nullptr) {
          for (int64_t c = b0; c < b1; ++c) acc[c - b0] += xr[c];
        } else {
          for (int64_t c = b0; c < b1; ++c) {
            const double d = static_cast<double>(xr[c]) - mean[c];
            acc[c - b0] += d * d;
          }
        }
      }
      for (int64_t c = b0; c < b1; ++c) out[c] = static_cast<float>(acc[c - b0] * scale);
    }
  });
}

void CpuBackend::batch_norm_forward(int64_t rows, int64_t cols, const float* x, const float* mean,
                                    const float* var, const float* gamma, const float* beta,
                                    float eps, float* y) {
  cpu::for_rows(team_, rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < cols; ++c)
        y[r * cols + c] =
            bn::forward(x[r * cols + c], mean[c], bn::inv_std(var[c], eps),
                        gamma != nullptr ? gamma[c] : 1.0f, beta != nullptr ? beta[c] : 0.0f);
  });
}

void CpuBackend::batch_norm_backward_reduce(int64_t rows, int64_t cols, const float* dy,
                                            const float* x, const float* mean, const float* var,
                                            float eps, float* sum_dy, float* sum_dy_xhat) {
  cpu::for_range(team_, cols, column_grain(rows, cols), [&](int64_t c0, int64_t c1) {
    for (int64_t b0 = c0; b0 < c1; b0 += kBlock) {
      const int64_t b1 = b0 + kBlock < c1 ? b0 + kBlock : c1;
      double s[kBlock] = {}, sx[kBlock] = {};
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        const float* dr = dy + r * cols;
        for (int64_t c = b0; c < b1; ++c) {
          const float xhat = (xr[c] - mean[c]) * bn::inv_std(var[c], eps);
          s[c - b0] += dr[c];
          sx[c - b0] += static_cast<double>(dr[c]) * xhat;
        }
      }
      for (int64_t c = b0; c < b1; ++c) {
        sum_dy[c] = static_cast<float>(s[c - b0]);
        sum_dy_xhat[c] = static_cast<float>(sx[c - b0]);
      }
    }
  });
}

void CpuBackend::batch_norm_backward(int64_t rows, int64_t cols, const float* dy, const float* x,
                                     const float* mean, const float* var, const float* gamma,
                                     float eps, const float* sum_dy, const float* sum_dy_xhat,
                                     float inv_n, float* dx) {
  cpu::for_rows(team_, rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const float is = bn::inv_std(var[c], eps);
        const float xhat = (x[r * cols + c] - mean[c]) * is;
        dx[r * cols + c] = bn::backward(dy[r * cols + c], xhat, gamma != nullptr ? gamma[c] : 1.0f,
                                        is, inv_n * sum_dy[c], inv_n * sum_dy_xhat[c]);
      }
  });
}

}  // namespace mr
