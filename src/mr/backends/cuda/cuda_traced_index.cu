// CUDA backend: the index and cast ops of traced graphs (contracts: core/
// backend.h, "i15-ops"; formulas: common/index_math.h, the CPU's). One
// thread per output element, looping in the contract's order: the CPU's
// arithmetic in the CPU's order, no atomics on values, deterministic. A bad
// take_along_axis index writes 0 and records itself in the status word (an
// atomicMin, so the first bad position wins whatever the schedule), which
// the next download()/synchronize() reports: nothing synchronises here.
#include <math.h>

#include "backends/common/index_math.h"
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"
#include "core/op_kinds.h"

namespace mr {

namespace {

__global__ void one_hot_kernel(int64_t n, int64_t classes, int64_t inner, const float* x,
                               float* y) {
  for (int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; p < n;
       p += int64_t{blockDim.x} * gridDim.x) {
    const int64_t i = p % inner, c = (p / inner) % classes, o = p / (classes * inner);
    y[p] = indexmath::one_hot_value(x[o * inner + i], c);
  }
}

__global__ void argmax_kernel(int64_t n, int64_t extent, int64_t inner, const float* x, float* y) {
  for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < n;
       j += int64_t{blockDim.x} * gridDim.x) {
    const int64_t o = j / inner, i = j - o * inner;
    y[j] = static_cast<float>(indexmath::argmax_one(extent, inner, x + o * extent * inner + i));
  }
}

__global__ void take_kernel(int64_t total, int64_t n, int64_t k, int64_t inner, const float* x,
                            const float* idx, float* y, unsigned long long* status) {
  for (int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; p < total;
       p += int64_t{blockDim.x} * gridDim.x) {
    const int64_t i = p % inner, o = p / (k * inner);
    const float v = idx[p];
    const int64_t t = indexmath::take_index(v, n);
    if (t >= 0) {
      y[p] = x[(o * n + t) * inner + i];
    } else {
      y[p] = 0.0f;
      atomicMin(status,
                kIndexStatusTag | kTakeStatusTag | status_position(p) | indexmath::bits_of(v));
    }
  }
}

// One thread per dx[o, e, i]: the terms in increasing j, from 0.0f.
__global__ void take_backward_kernel(int64_t total, int64_t n, int64_t k, int64_t inner,
                                     const float* idx, const float* dy, float* dx) {
  for (int64_t q = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; q < total;
       q += int64_t{blockDim.x} * gridDim.x) {
    const int64_t i = q % inner, e = (q / inner) % n, o = q / (n * inner);
    float acc = 0.0f;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t p = (o * k + j) * inner + i;
      if (indexmath::take_index(idx[p], n) == e) acc += dy[p];
    }
    dx[q] = acc;
  }
}

__global__ void cast_kernel(CastOp op, int64_t n, const float* x, float* y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    y[i] = indexmath::cast_value(op, x[i]);
}

}  // namespace

void CudaBackend::one_hot(int64_t outer, int64_t classes, int64_t inner, const float* x, float* y) {
  check_axis_view(outer, classes, inner, "one_hot");
  const int64_t n = outer * classes * inner;
  if (n <= 0) return;
  use_device(ordinal_);
  one_hot_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, classes, inner, x, y);
  cuda::check_launch("one_hot_kernel", ordinal_);
}

void CudaBackend::argmax(int64_t outer, int64_t extent, int64_t inner, const float* x, float* y) {
  check_axis_view(outer, extent, inner, "argmax");
  const int64_t n = outer * inner;
  if (n <= 0) return;
  MR_CHECK(extent >= 1, internal, "argmax: an empty axis has no argmax");
  use_device(ordinal_);
  argmax_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, extent, inner, x, y);
  cuda::check_launch("argmax_kernel", ordinal_);
}

void CudaBackend::take_along_axis(int64_t outer, int64_t n, int64_t k, int64_t inner,
                                  const float* x, const float* idx, float* y) {
  check_axis_view(outer, k, inner, "take_along_axis");
  const int64_t total = outer * k * inner;
  if (total <= 0) return;
  // Positions share the status word's bits 32..61 (bits 62, 63: the tags).
  MR_CHECK(total < (int64_t{1} << 30), shape,
           "take_along_axis: too many indices for one call: ", total);
  use_device(ordinal_);
  take_kernel<<<cuda::blocks_for(total), cuda::kThreads, 0, stream_>>>(total, n, k, inner, x, idx,
                                                                       y, label_status());
  cuda::check_launch("take_kernel", ordinal_);
  status_take_n_ = n;
  status_armed_ = true;
}

void CudaBackend::take_along_axis_backward(int64_t outer, int64_t n, int64_t k, int64_t inner,
                                           const float* idx, const float* dy, float* dx) {
  check_axis_view(outer, n, inner, "take_along_axis_backward");
  MR_CHECK(k >= 0, internal, "take_along_axis_backward: k = ", k);
  const int64_t total = outer * n * inner;
  if (total <= 0) return;
  use_device(ordinal_);
  take_backward_kernel<<<cuda::blocks_for(total), cuda::kThreads, 0, stream_>>>(total, n, k, inner,
                                                                                idx, dy, dx);
  cuda::check_launch("take_backward_kernel", ordinal_);
}

void CudaBackend::cast_values(CastOp op, int64_t n, const float* x, float* y) {
  check_op(op, "cast_values");
  if (n <= 0) return;
  use_device(ordinal_);
  cast_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(op, n, x, y);
  cuda::check_launch("cast_kernel", ordinal_);
}

}  // namespace mr
