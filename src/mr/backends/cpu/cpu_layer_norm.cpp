// CPU layer-normalization ops. Rows are split over the team; each row's
// statistics are summed in double in column order (two passes: the mean,
// then the squared deviations from it, which stays accurate when the mean is
// large against the spread). dgamma / dbeta are column sums over all rows in
// row order (columns split over the team), so no result depends on the team
// size.
#include <cmath>

#include "backends/common/layer_norm_math.h"
#include "backends/cpu/cpu_backend.h"

namespace mr {

namespace {

constexpr int64_t kBlock = 64;  // columns per accumulator block (on the stack)

}  // namespace

void CpuBackend::layer_norm_forward(int64_t rows, int64_t cols, const float* x, const float* gamma,
                                    const float* beta, float eps, bool rms, float* stats,
                                    float* y) {
  if (rows <= 0 || cols <= 0) return;
  cpu::for_rows(team_, rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * cols;
      double s = 0.0;
      for (int64_t c = 0; c < cols; ++c) s += xr[c];
      const double mean = s / static_cast<double>(cols);
      double ss = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        const double d = xr[c] - mean;
        ss += d * d;
      }
      const double var = ss / static_cast<double>(cols);
      const auto m = static_cast<float>(mean);
      const auto inv = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
      stats[2 * r] = m;
      stats[2 * r + 1] = inv;
      float* yr = y + r * cols;
      for (int64_t c = 0; c < cols; ++c)
        yr[c] = lnorm::unit(xr[c], m, inv, rms) * (gamma != nullptr ? gamma[c] : 1.0f) +
                (beta != nullptr ? beta[c] : 0.0f);
    }
  });
}

void CpuBackend::layer_norm_backward(int64_t rows, int64_t cols, const float* dy, const float* x,
                                     const float* gamma, const float* stats, bool rms, float* dx,
                                     float* dgamma, float* dbeta) {
  if (cols <= 0) return;
  if (dx != nullptr && rows > 0) {
    cpu::for_rows(team_, rows, cols, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* xr = x + r * cols;
        const float* dr = dy + r * cols;
        const float m = stats[2 * r], inv = stats[2 * r + 1];
        double sg = 0.0, sgu = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
          const float g = dr[c] * (gamma != nullptr ? gamma[c] : 1.0f);
          sg += g;
          sgu += static_cast<double>(g) * lnorm::unit(xr[c], m, inv, rms);
        }
        const auto mean_g = static_cast<float>(sg / static_cast<double>(cols));
        const auto mean_gu = static_cast<float>(sgu / static_cast<double>(cols));
        float* out = dx + r * cols;
        for (int64_t c = 0; c < cols; ++c) {
          const float g = dr[c] * (gamma != nullptr ? gamma[c] : 1.0f);
          out[c] = lnorm::backward(g, (xr[c] - m) * inv, inv, mean_g, mean_gu, rms);
        }
      }
    });
  }
  if (dgamma == nullptr && dbeta == nullptr) return;
  const int64_t grain = rows * cols < cpu::kRowwiseMinWork ? cols : 16;
  cpu::for_range(team_, cols, grain, [&](int64_t c0, int64_t c1) {
    for (int64_t b0 = c0; b0 < c1; b0 += kBlock) {
      const int64_t b1 = b0 + kBlock < c1 ? b0 + kBlock : c1;
      double su[kBlock] = {}, sd[kBlock] = {};
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        const float* dr = dy + r * cols;
        const float m = stats[2 * r], inv = stats[2 * r + 1];
        for (int64_t c = b0; c < b1; ++c) {
          su[c - b0] += static_cast<double>(dr[c]) * lnorm::unit(xr[c], m, inv, rms);
          sd[c - b0] += dr[c];
        }
      }
      for (int64_t c = b0; c < b1; ++c) {
        if (dgamma != nullptr) dgamma[c] = static_cast<float>(su[c - b0]);
        if (dbeta != nullptr) dbeta[c] = static_cast<float>(sd[c - b0]);
      }
    }
  });
}

}  // namespace mr
