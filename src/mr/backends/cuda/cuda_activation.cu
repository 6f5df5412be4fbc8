// CUDA backend: activations (forward and backward) and dropout. The scalar
// formulas are kernel_math.h's, shared with the CPU backend; softmax runs one
// warp per row (max and sum by a fixed shuffle tree, so the result depends
// only on the row); dropout draws the CPU backend's Philox words.
#include <cfloat>

#include "backends/common/kernel_math.h"
#include "backends/common/nan_math.h"
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"
#include "core/rng.h"

namespace mr {

namespace {

__global__ void act_forward_kernel(Activation act, int64_t n, const float* x, float* y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const float v = x[i];
    switch (act) {
      case Activation::relu:
        y[i] = v < 0.0f ? 0.0f : v;  // keeps a NaN, as TensorFlow's relu
        break;
      case Activation::sigmoid:
        y[i] = kmath::sigmoid(v);
        break;
      case Activation::tanh:
        y[i] = tanhf(v);
        break;
      case Activation::gelu:
        y[i] = kmath::gelu(v);
        break;
      default:
        y[i] = v;
        break;
    }
  }
}

// See cpu_activation.cpp for which of x / y each backward reads.
__global__ void act_backward_kernel(Activation act, int64_t n, const float* x, const float* y,
                                    const float* dy, float* dx) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    switch (act) {
      case Activation::relu:
        dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
        break;
      case Activation::sigmoid:
        dx[i] = dy[i] * y[i] * (1.0f - y[i]);
        break;
      case Activation::tanh:
        dx[i] = dy[i] * (1.0f - y[i] * y[i]);
        break;
      case Activation::gelu:
        dx[i] = dy[i] * kmath::gelu_grad(x[i]);
        break;
      default:
        dx[i] = dy[i];
        break;
    }
  }
}

// The activations of kmath::generic_activation, with their parameters.
__global__ void act_generic_forward_kernel(Activation act, ActivationParams p, int64_t n,
                                           const float* x, float* y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    y[i] = kmath::act_value(act, x[i], p);
}

__global__ void act_generic_backward_kernel(Activation act, ActivationParams p, int64_t n,
                                            const float* x, const float* y, const float* dy,
                                            float* dx) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    dx[i] = dy[i] * kmath::act_grad(act, x[i], y[i], p);
}

// __forceinline__: an out-of-line __device__ function gets a host stub that
// calls exit(), which R CMD check rejects in a package.
__device__ __forceinline__ float warp_max(float v) {
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, off));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, off);
  return v;
}

constexpr int kWarpsPerBlock = 8;

// One warp per row; outputs below FLT_MIN become exactly 0, as on the CPU.
__global__ void softmax_kernel(int64_t rows, int64_t cols, const float* x, float* y) {
  const int64_t r = blockIdx.x * int64_t{kWarpsPerBlock} + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const float* xr = x + r * cols;
  float* yr = y + r * cols;
  float mx = -INFINITY;
  for (int64_t c = lane; c < cols; c += 32) mx = fmaxf(mx, xr[c]);
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int64_t c = lane; c < cols; c += 32) {
    const float e = expf(xr[c] - mx);
    yr[c] = e;
    sum += e;
  }
  const float inv = 1.0f / warp_sum(sum);
  for (int64_t c = lane; c < cols; c += 32) {
    const float p = yr[c] * inv;
    yr[c] = p < FLT_MIN ? 0.0f : p;
  }
}

__global__ void softmax_backward_kernel(int64_t rows, int64_t cols, const float* y, const float* dy,
                                        float* dx) {
  const int64_t r = blockIdx.x * int64_t{kWarpsPerBlock} + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const float* yr = y + r * cols;
  const float* dyr = dy + r * cols;
  float* dxr = dx + r * cols;
  float dot = 0.0f;
  for (int64_t c = lane; c < cols; c += 32) dot += dyr[c] * yr[c];
  dot = warp_sum(dot);
  for (int64_t c = lane; c < cols; c += 32) dxr[c] = yr[c] * (dyr[c] - dot);
}

// One warp per row: y = (x - max) - log(sum exp(x - max)). Safe in place:
// the row is read completely (max, sum) before any lane writes it.
__global__ void log_softmax_kernel(int64_t rows, int64_t cols, const float* x, float* y) {
  const int64_t r = blockIdx.x * int64_t{kWarpsPerBlock} + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const float* xr = x + r * cols;
  float* yr = y + r * cols;
  float mx = -INFINITY;
  for (int64_t c = lane; c < cols; c += 32) mx = fmaxf(mx, xr[c]);
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int64_t c = lane; c < cols; c += 32) sum += expf(xr[c] - mx);
  const float ls = logf(warp_sum(sum));  // x - max first: no digits lost to max + log(sum)
  __syncwarp();
  for (int64_t c = lane; c < cols; c += 32) yr[c] = (xr[c] - mx) - ls;
}

// dx = dy - exp(y) * sum(dy).
__global__ void log_softmax_backward_kernel(int64_t rows, int64_t cols, const float* y,
                                            const float* dy, float* dx) {
  const int64_t r = blockIdx.x * int64_t{kWarpsPerBlock} + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const float* yr = y + r * cols;
  const float* dyr = dy + r * cols;
  float* dxr = dx + r * cols;
  float sum = 0.0f;
  for (int64_t c = lane; c < cols; c += 32) sum += dyr[c];
  sum = warp_sum(sum);
  __syncwarp();
  for (int64_t c = lane; c < cols; c += 32) dxr[c] = dyr[c] - expf(yr[c]) * sum;
}

// Thread t handles Philox block b0 + t, i.e. stream words 4b..4b+3 that fall in
// [base, base + n): word g masks element g - base, as on the CPU.
__global__ void dropout_kernel(uint64_t base, int64_t n, float rate, float scale, uint64_t seed,
                               const StepScalars* __restrict__ s, uint32_t stream, const float* x,
                               float* mask, float* y) {
  const RandomStream rs(seed, s->step, stream);  // the step from the device block
  const uint64_t first = base >> 2, last = (base + static_cast<uint64_t>(n) - 1) >> 2;
  for (uint64_t b = first + blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; b <= last;
       b += uint64_t{blockDim.x} * gridDim.x) {
    const Philox4 words = rs.block(b);
    for (uint64_t w = 0; w < 4; ++w) {
      const uint64_t g = b * 4 + w;
      if (g < base || g >= base + static_cast<uint64_t>(n)) continue;
      const uint64_t i = g - base;
      const float m = RandomStream::uniform_of(words[w]) >= rate ? scale : 0.0f;
      mask[i] = m;
      y[i] = nanmath::dropout_value(x[i], m);
    }
  }
}

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

}  // namespace

void CudaBackend::activation_forward(Activation act, int64_t rows, int64_t cols, const float* x,
                                     float* y, const ActivationParams& p) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  use_device(ordinal_);
  if (act == Activation::log_softmax) {
    log_softmax_kernel<<<row_blocks(rows), 32 * kWarpsPerBlock, 0, stream_>>>(rows, cols, x, y);
    cuda::check_launch("log_softmax_kernel", ordinal_);
    return;
  }
  if (kmath::generic_activation(act, p)) {
    act_generic_forward_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(act, p, n, x,
                                                                                    y);
    cuda::check_launch("act_generic_forward_kernel", ordinal_);
    return;
  }
  if (act == Activation::linear) {
    copy(y, x, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  if (act == Activation::softmax) {
    MR_CHECK(x != y, internal, "softmax cannot run in place");
    softmax_kernel<<<row_blocks(rows), 32 * kWarpsPerBlock, 0, stream_>>>(rows, cols, x, y);
    cuda::check_launch("softmax_kernel", ordinal_);
    return;
  }
  MR_CHECK(act != Activation::gelu || x != y, internal, "gelu cannot run in place");
  act_forward_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(act, n, x, y);
  cuda::check_launch("act_forward_kernel", ordinal_);
}

void CudaBackend::activation_backward(Activation act, int64_t rows, int64_t cols, const float* x,
                                      const float* y, const float* dy, float* dx,
                                      const ActivationParams& p) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  use_device(ordinal_);
  if (act == Activation::log_softmax) {
    log_softmax_backward_kernel<<<row_blocks(rows), 32 * kWarpsPerBlock, 0, stream_>>>(rows, cols,
                                                                                       y, dy, dx);
    cuda::check_launch("log_softmax_backward_kernel", ordinal_);
    return;
  }
  if (kmath::generic_activation(act, p)) {
    act_generic_backward_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(act, p, n, x,
                                                                                     y, dy, dx);
    cuda::check_launch("act_generic_backward_kernel", ordinal_);
    return;
  }
  if (act == Activation::linear) {
    copy(dx, dy, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  if (act == Activation::softmax) {
    softmax_backward_kernel<<<row_blocks(rows), 32 * kWarpsPerBlock, 0, stream_>>>(rows, cols, y,
                                                                                   dy, dx);
    cuda::check_launch("softmax_backward_kernel", ordinal_);
    return;
  }
  act_backward_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(act, n, x, y, dy, dx);
  cuda::check_launch("act_backward_kernel", ordinal_);
}

void CudaBackend::dropout_forward(int64_t rows, int64_t cols, float rate, uint64_t seed,
                                  const StepScalars* s, uint32_t stream, int64_t row_offset,
                                  const float* x, float* mask, float* y) {
  MR_CHECK(rate >= 0.0f && rate < 1.0f, value, "dropout rate must be in [0, 1), got ", rate);
  MR_CHECK(row_offset >= 0, value, "dropout row_offset must be >= 0, got ", row_offset);
  const int64_t n = rows * cols;
  if (n <= 0) return;
  use_device(ordinal_);
  const uint64_t base = static_cast<uint64_t>(row_offset) * static_cast<uint64_t>(cols);
  const float scale = 1.0f / (1.0f - rate);
  const int64_t nblocks = static_cast<int64_t>(((base + n - 1) >> 2) - (base >> 2) + 1);
  dropout_kernel<<<cuda::blocks_for(nblocks), cuda::kThreads, 0, stream_>>>(
      base, n, rate, scale, seed, s, stream, x, mask, y);
  cuda::check_launch("dropout_kernel", ordinal_);
}

}  // namespace mr
