// Max and average pooling on the CPU (contracts in core/backend.h). Samples
// are split across the team; within a sample, outputs are visited in order
// and channels are the inner (vectorised) loop, so a backward that adds
// overlapping windows into dx does so in a fixed order.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "backends/common/nan_math.h"
#include "backends/common/pool_math.h"
#include "backends/cpu/cpu_backend.h"

namespace mr {

namespace {

// Channels whose first maximum is looked for at once in max_pool_backward.
constexpr int64_t kChannelBlock = 256;

template <typename F>
void each_output(const ConvGeometry& g, int64_t n0, int64_t n1, F&& f) {
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      for (int64_t ox = 0; ox < g.out_w; ++ox) f(n, oy, ox, pool::window(g, oy, ox));
}

int64_t in_floats(const ConvGeometry& g) { return g.in_h * g.in_w * g.in_c; }
int64_t out_floats(const ConvGeometry& g) { return g.out_h * g.out_w * g.in_c; }

}  // namespace

void CpuBackend::max_pool_forward(const ConvGeometry& g, int64_t rows, const float* x, float* y) {
  const int64_t c = g.in_c;
  cpu::for_rows(team_, rows, out_floats(g) * g.k_h * g.k_w, [&](int64_t n0, int64_t n1) {
    each_output(g, n0, n1, [&](int64_t n, int64_t oy, int64_t ox, const pool::Window& w) {
      float* yo = y + ((n * g.out_h + oy) * g.out_w + ox) * c;
      std::fill(yo, yo + c, -std::numeric_limits<float>::infinity());
      for (int64_t iy = w.y0; iy < w.y1; ++iy)
        for (int64_t ix = w.x0; ix < w.x1; ++ix) {
          const float* xi = x + ((n * g.in_h + iy) * g.in_w + ix) * c;
          for (int64_t k = 0; k < c; ++k) yo[k] = nanmath::max_nan(yo[k], xi[k]);
        }
    });
  });
}

void CpuBackend::max_pool_backward(const ConvGeometry& g, int64_t rows, const float* x,
                                   const float* y, const float* dy, float* dx) {
  const int64_t c = g.in_c;
  // Windows that do not overlap (stride >= pool size, the usual case) give
  // each input element to at most one output: dx is then assigned, not
  // accumulated, and only needs zeros first where no window reaches (a
  // "valid" remainder, gaps between windows, nothing when they tile it).
  const bool disjoint = g.stride_h >= g.k_h && g.stride_w >= g.k_w;
  const bool tiles = disjoint && g.stride_h == g.k_h && g.stride_w == g.k_w && g.pad_top == 0 &&
                     g.pad_left == 0 && g.out_h * g.k_h == g.in_h && g.out_w * g.k_w == g.in_w;
  cpu::for_rows(team_, rows, out_floats(g) * g.k_h * g.k_w, [&](int64_t n0, int64_t n1) {
    if (!tiles) std::fill(dx + n0 * in_floats(g), dx + n1 * in_floats(g), 0.0f);
    uint8_t done[kChannelBlock];
    each_output(g, n0, n1, [&](int64_t n, int64_t oy, int64_t ox, const pool::Window& w) {
      const int64_t o = ((n * g.out_h + oy) * g.out_w + ox) * c;
      for (int64_t c0 = 0; c0 < c; c0 += kChannelBlock) {
        const int64_t cb = std::min(kChannelBlock, c - c0);
        const float* __restrict yo = y + o + c0;
        const float* __restrict dyo = dy + o + c0;
        std::fill(done, done + cb, uint8_t{0});
        // The first element (window order) equal to the maximum gets dy.
        for (int64_t iy = w.y0; iy < w.y1; ++iy)
          for (int64_t ix = w.x0; ix < w.x1; ++ix) {
            const int64_t i = ((n * g.in_h + iy) * g.in_w + ix) * c + c0;
            const float* __restrict xi = x + i;
            float* __restrict di = dx + i;
            if (disjoint) {
              for (int64_t k = 0; k < cb; ++k) {
                const uint8_t hit =
                    static_cast<uint8_t>(done[k] == 0 && nanmath::same_or_nan(xi[k], yo[k]));
                di[k] = hit ? dyo[k] : 0.0f;
                done[k] |= hit;
              }
            } else {
              for (int64_t k = 0; k < cb; ++k) {
                const uint8_t hit =
                    static_cast<uint8_t>(done[k] == 0 && nanmath::same_or_nan(xi[k], yo[k]));
                di[k] += hit ? dyo[k] : 0.0f;
                done[k] |= hit;
              }
            }
          }
      }
    });
  });
}

void CpuBackend::avg_pool_forward(const ConvGeometry& g, int64_t rows, const float* x, float* y) {
  const int64_t c = g.in_c;
  cpu::for_rows(team_, rows, out_floats(g) * g.k_h * g.k_w, [&](int64_t n0, int64_t n1) {
    each_output(g, n0, n1, [&](int64_t n, int64_t oy, int64_t ox, const pool::Window& w) {
      float* yo = y + ((n * g.out_h + oy) * g.out_w + ox) * c;
      std::fill(yo, yo + c, 0.0f);
      for (int64_t iy = w.y0; iy < w.y1; ++iy)
        for (int64_t ix = w.x0; ix < w.x1; ++ix) {
          const float* xi = x + ((n * g.in_h + iy) * g.in_w + ix) * c;
          for (int64_t k = 0; k < c; ++k) yo[k] += xi[k];
        }
      const float inv = 1.0f / static_cast<float>(w.count());
      for (int64_t k = 0; k < c; ++k) yo[k] *= inv;
    });
  });
}

void CpuBackend::avg_pool_backward(const ConvGeometry& g, int64_t rows, const float* dy,
                                   float* dx) {
  const int64_t c = g.in_c;
  cpu::for_rows(team_, rows, out_floats(g) * g.k_h * g.k_w, [&](int64_t n0, int64_t n1) {
    std::fill(dx + n0 * in_floats(g), dx + n1 * in_floats(g), 0.0f);
    each_output(g, n0, n1, [&](int64_t n, int64_t oy, int64_t ox, const pool::Window& w) {
      const float* d = dy + ((n * g.out_h + oy) * g.out_w + ox) * c;
      const float inv = 1.0f / static_cast<float>(w.count());
      for (int64_t iy = w.y0; iy < w.y1; ++iy)
        for (int64_t ix = w.x0; ix < w.x1; ++ix) {
          float* di = dx + ((n * g.in_h + iy) * g.in_w + ix) * c;
          for (int64_t k = 0; k < c; ++k) di[k] += d[k] * inv;
        }
    });
  });
}

}  // namespace mr
