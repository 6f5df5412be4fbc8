// Max and average pooling on the GPU (contracts in core/backend.h), one
// thread per output element forward and one per input element backward (a
// gather over the outputs whose window holds it, in output order): no
// atomics, so results repeat bit for bit. Windows: backends/common/pool_math.h.
#include "backends/common/nan_math.h"
#include "backends/common/pool_math.h"
#include "backends/cuda/cuda_backend.h"

namespace mr {

namespace {

// The outputs along one axis whose window (k elements from o*s - pad) holds
// input index i: [lo, hi).
__device__ __forceinline__ void covering(int64_t i, int64_t k, int64_t s, int64_t pad, int64_t out,
                                         int64_t* lo, int64_t* hi) {
  const int64_t t = i + pad;  // o*s <= t < o*s + k
  int64_t a = t - k + 1;
  a = a <= 0 ? 0 : (a + s - 1) / s;
  int64_t b = t / s + 1;
  *lo = a;
  *hi = b < out ? b : out;
}

__global__ void pool_forward_kernel(ConvGeometry g, int64_t rows, bool is_max,
                                    const float* __restrict__ x, float* __restrict__ y) {
  const int64_t c = g.in_c, total = rows * g.out_h * g.out_w * c;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t ch = i % c, ox = (i / c) % g.out_w, oy = (i / (c * g.out_w)) % g.out_h;
    const int64_t n = i / (c * g.out_w * g.out_h);
    const pool::Window w = pool::window(g, oy, ox);
    float acc = is_max ? -INFINITY : 0.0f;
    for (int64_t iy = w.y0; iy < w.y1; ++iy)
      for (int64_t ix = w.x0; ix < w.x1; ++ix) {
        const float v = x[((n * g.in_h + iy) * g.in_w + ix) * c + ch];
        acc = is_max ? nanmath::max_nan(acc, v) : acc + v;
      }
    y[i] = is_max ? acc : acc * (1.0f / static_cast<float>(w.count()));
  }
}

__global__ void pool_backward_kernel(ConvGeometry g, int64_t rows, bool is_max,
                                     const float* __restrict__ x, const float* __restrict__ y,
                                     const float* __restrict__ dy, float* __restrict__ dx) {
  const int64_t c = g.in_c, total = rows * g.in_h * g.in_w * c;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t ch = i % c, ix = (i / c) % g.in_w, iy = (i / (c * g.in_w)) % g.in_h;
    const int64_t n = i / (c * g.in_w * g.in_h);
    int64_t oy0, oy1, ox0, ox1;
    covering(iy, g.k_h, g.stride_h, g.pad_top, g.out_h, &oy0, &oy1);
    covering(ix, g.k_w, g.stride_w, g.pad_left, g.out_w, &ox0, &ox1);
    float s = 0.0f;
    for (int64_t oy = oy0; oy < oy1; ++oy)
      for (int64_t ox = ox0; ox < ox1; ++ox) {
        const int64_t o = ((n * g.out_h + oy) * g.out_w + ox) * c + ch;
        const pool::Window w = pool::window(g, oy, ox);
        if (!is_max) {
          s += dy[o] * (1.0f / static_cast<float>(w.count()));
          continue;
        }
        // Does this element hold the window's first maximum?
        bool first = false, found = false;
        for (int64_t wy = w.y0; wy < w.y1 && !found; ++wy)
          for (int64_t wx = w.x0; wx < w.x1 && !found; ++wx)
            if (nanmath::same_or_nan(x[((n * g.in_h + wy) * g.in_w + wx) * c + ch], y[o])) {
              found = true;
              first = wy == iy && wx == ix;
            }
        if (first) s += dy[o];
      }
    dx[i] = s;
  }
}

}  // namespace

void CudaBackend::max_pool_forward(const ConvGeometry& g, int64_t rows, const float* x, float* y) {
  const int64_t n = rows * g.out_h * g.out_w * g.in_c;
  if (n == 0) return;
  use_device(ordinal_);
  pool_forward_kernel<<<cuda::blocks_for(n, 65535), cuda::kThreads, 0, stream_>>>(g, rows, true, x,
                                                                                  y);
  cuda::check_launch("pool_forward_kernel", ordinal_);
}

void CudaBackend::avg_pool_forward(const ConvGeometry& g, int64_t rows, const float* x, float* y) {
  const int64_t n = rows * g.out_h * g.out_w * g.in_c;
  if (n == 0) return;
  use_device(ordinal_);
  pool_forward_kernel<<<cuda::blocks_for(n, 65535), cuda::kThreads, 0, stream_>>>(g, rows, false, x,
                                                                                  y);
  cuda::check_launch("pool_forward_kernel", ordinal_);
}

void CudaBackend::max_pool_backward(const ConvGeometry& g, int64_t rows, const float* x,
                                    const float* y, const float* dy, float* dx) {
  const int64_t n = rows * g.in_h * g.in_w * g.in_c;
  if (n == 0) return;
  use_device(ordinal_);
  pool_backward_kernel<<<cuda::blocks_for(n, 65535), cuda::kThreads, 0, stream_>>>(g, rows, true, x,
                                                                                   y, dy, dx);
  cuda::check_launch("pool_backward_kernel", ordinal_);
}

void CudaBackend::avg_pool_backward(const ConvGeometry& g, int64_t rows, const float* dy,
                                    float* dx) {
  const int64_t n = rows * g.in_h * g.in_w * g.in_c;
  if (n == 0) return;
  use_device(ordinal_);
  pool_backward_kernel<<<cuda::blocks_for(n, 65535), cuda::kThreads, 0, stream_>>>(
      g, rows, false, nullptr, nullptr, dy, dx);
  cuda::check_launch("pool_backward_kernel", ordinal_);
}

}  // namespace mr
