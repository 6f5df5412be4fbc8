// Backend::traced_reduce on CUDA (contract: core/backend.h, "i15-users";
// formulas: common/traced_reduce_math.h, shared with the CPU). One block of
// kThreads threads: thread t takes rows t, t + kThreads, ... and sums in
// double in that order, a fixed tree adds the threads' sums and thread 0
// adds the totals to the device doubles: no atomics, the result depends only
// on the shape, and nothing is read back to the host. The output gradient
// is a grid-stride kernel (batched) or written by the same block (not
// batched). Both launch on the backend's stream.
#include "backends/common/traced_reduce_math.h"
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace mr {

namespace {

constexpr int kBlock = 256;

// Sums of w_r * mean(row r) (batched) and of w_r over the rows, added to
// *sum and *count; not batched: the batch mean v times the weights' total,
// and the output gradient grad_scale * W / width.
__global__ void traced_reduce_kernel(bool batched, int64_t rows, int64_t width, const float* out,
                                     const float* w, float grad_scale, float* d_out, double* sum,
                                     double* count) {
  __shared__ double ps[kBlock];
  __shared__ double pc[kBlock];
  double s = 0.0, c = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += kBlock) {
    const double wr = trmath::weight(w, r);
    if (batched) s += wr * trmath::mean(out + r * width, width);
    c += wr;
  }
  ps[threadIdx.x] = s;
  pc[threadIdx.x] = c;
  __syncthreads();
  for (int half = kBlock / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) {
      ps[threadIdx.x] += ps[threadIdx.x + half];
      pc[threadIdx.x] += pc[threadIdx.x + half];
    }
    __syncthreads();
  }
  const double total = pc[0];
  if (threadIdx.x == 0) {
    *sum += batched ? ps[0] : trmath::mean(out, width) * total;
    if (count != nullptr) *count += total;
  }
  if (!batched && d_out != nullptr) {
    const float g = trmath::grad(grad_scale, total, width);
    for (int64_t j = threadIdx.x; j < width; j += kBlock) d_out[j] = g;
  }
}

// d_out[r * width + j] = grad_scale * w_r / width.
__global__ void traced_grad_kernel(int64_t rows, int64_t width, const float* w, float grad_scale,
                                   float* d_out) {
  const int64_t n = rows * width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    d_out[i] = trmath::grad(grad_scale, trmath::weight(w, i / width), width);
}

}  // namespace

void CudaBackend::traced_reduce(bool batched, int64_t rows, int64_t width, const float* out,
                                const float* sample_weight, float grad_scale, float* d_out,
                                double* sum, double* count) {
  MR_CHECK(width >= 1, shape, "traced_reduce needs width >= 1, got ", width);
  if (rows < 0) rows = 0;
  use_device(ordinal_);
  traced_reduce_kernel<<<1, kBlock, 0, stream_>>>(
      batched, rows, width, out, sample_weight, grad_scale, batched ? nullptr : d_out, sum, count);
  cuda::check_launch("traced_reduce_kernel", ordinal_);
  if (batched && d_out != nullptr && rows > 0) {
    traced_grad_kernel<<<cuda::blocks_for(rows * width), cuda::kThreads, 0, stream_>>>(
        rows, width, sample_weight, grad_scale, d_out);
    cuda::check_launch("traced_grad_kernel", ordinal_);
  }
}

}  // namespace mr
