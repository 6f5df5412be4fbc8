// CUDA backend: losses and metrics. One thread per row computes
// kernel_math.h's row formula (the CPU backend's), each block sums its row
// values in double by a fixed tree into a partial, and one thread then adds
// the partials in block order to the accumulator: the sum depends only on the
// shape, and nothing is read back to the host.
#include <climits>
#include <cstring>

#include "backends/common/kernel_math.h"
#include "backends/common/loss_math.h"
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace mr {

namespace {

constexpr int kRowsPerBlock = 256;

// __forceinline__: no host stub calling exit() (see cuda_activation.cu).
__device__ __forceinline__ void block_sum_to(double v, double* out) {
  __shared__ double part[kRowsPerBlock];
  part[threadIdx.x] = v;
  __syncthreads();
  for (int half = kRowsPerBlock / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = part[0];
}

// The LossParams travel by value (a trivially copyable kernel argument).
__global__ void loss_kernel(LossKind kind, LossParams p, int64_t rows, int64_t cols,
                            const float* pred, const float* target, const float* sw, float gs,
                            float* dpred, double* partials, unsigned long long* status) {
  const int64_t r = blockIdx.x * int64_t{kRowsPerBlock} + threadIdx.x;
  double v = 0.0;
  if (r < rows) {
    bool bad = false;
    v = kmath::loss_row(kind, p, r, cols, pred, target, sw, gs, dpred, &bad);
    if (bad) {
      // The smallest bad row wins; its label's bits ride in the low word.
      unsigned bits = 0;
      const float label = target[r];
      memcpy(&bits, &label, sizeof(bits));
      atomicMin(status, (static_cast<unsigned long long>(r) << 32) | bits);
    }
  }
  block_sum_to(v, partials + blockIdx.x);
}

// acc[0] += sum of partials (in block order); acc[1] += count when count >= 0.
__global__ void finish_kernel(const double* partials, int64_t blocks, double* acc, double count) {
  double s = 0.0;
  for (int64_t b = 0; b < blocks; ++b) s += partials[b];
  acc[0] += s;
  if (count >= 0.0) acc[1] += count;
}

int64_t blocks_of(int64_t rows) { return (rows + kRowsPerBlock - 1) / kRowsPerBlock; }

}  // namespace

void CudaBackend::loss(LossKind kind, const LossParams& p, int64_t rows, int64_t cols,
                       const float* pred, const float* target, const float* sample_weight,
                       float grad_scale, float* dpred, double* loss_acc) {
  MR_CHECK(cols >= 1, shape, "a loss needs at least one column, got ", cols);
  MR_CHECK(rows < (int64_t{1} << 31), shape, "too many rows for one loss call: ", rows);
  if (rows <= 0) return;
  use_device(ordinal_);
  const int64_t blocks = blocks_of(rows);
  double* partials = reduction_scratch(blocks);
  loss_kernel<<<static_cast<unsigned>(blocks), kRowsPerBlock, 0, stream_>>>(
      kind, p, rows, cols, pred, target, sample_weight, grad_scale, dpred, partials,
      label_status());
  cuda::check_launch("loss_kernel", ordinal_);
  if (kind == LossKind::sparse_categorical_crossentropy) {
    status_cols_ = cols;
    status_armed_ = true;
  }
  if (loss_acc == nullptr) return;
  finish_kernel<<<1, 1, 0, stream_>>>(partials, blocks, loss_acc, -1.0);
  cuda::check_launch("finish_kernel", ordinal_);
}

}  // namespace mr
