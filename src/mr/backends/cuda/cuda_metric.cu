// CUDA backend: the metric op. One block per state element j; its threads
// take rows r = thread, thread + 256, ... and sum w_r * term(j, r)
// (backends/common/metric_math.h, the CPU's formulas) in double in that order,
// a fixed tree adds the threads' sums and thread 0 adds the total to the
// state: no atomics, the sum depends only on the shape, and nothing is read
// back to the host.
#include "backends/common/metric_math.h"
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace mr {

namespace {

constexpr int kThreads = 256;

__global__ void metric_kernel(MetricSpec m, int64_t rows, int64_t cols, const float* pred,
                              const float* target, const float* weight, double* state) {
  __shared__ double part[kThreads];
  const int64_t j = blockIdx.x;
  double s = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += kThreads) {
    s += mmath::row_weight(m, weight, r) * mmath::term(m, j, r, cols, pred, target);
  }
  part[threadIdx.x] = s;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) state[j] += part[0];
}

}  // namespace

void CudaBackend::metric(const MetricSpec& m, int64_t rows, int64_t cols, const float* pred,
                         const float* target, const float* sample_weight, double* state) {
  MR_CHECK(cols >= 1, shape, "a metric needs at least one column, got ", cols);
  if (rows <= 0) return;
  const int64_t n = metric_state_size(m, cols);
  MR_CHECK(n >= 1 && n < (int64_t{1} << 31), shape, "a metric state of ", n, " doubles");
  use_device(ordinal_);
  metric_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream_>>>(m, rows, cols, pred, target,
                                                                    sample_weight, state);
  cuda::check_launch("metric_kernel", ordinal_);
}

}  // namespace mr
