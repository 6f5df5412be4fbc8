// CUDA layer-normalization ops. One block of kThreadsPerRow threads per row:
// thread t sums columns t, t + kThreadsPerRow, ... in double, then the block
// adds the partials by a fixed tree, so a row's statistics depend only on the
// shape (runs repeat, replicas stay bit-identical). dgamma / dbeta are a
// chunked column reduction (cuda_column_reduce.h): row chunks on blockIdx.y,
// 32 columns x kColumnLanes lanes per chunk, lanes then chunks added in order.
#include "backends/common/layer_norm_math.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_column_reduce.h"

namespace mr {

namespace {

constexpr int kThreadsPerRow = 256;

// Sums v over the block by a fixed tree; every thread gets the total.
// __forceinline__: no host stub calling exit() (see cuda_activation.cu).
__device__ __forceinline__ double row_sum(double v, double* part) {
  part[threadIdx.x] = v;
  __syncthreads();
  for (int half = kThreadsPerRow / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  const double total = part[0];
  __syncthreads();  // part is reused by the next sum
  return total;
}

__global__ void ln_forward_kernel(int64_t cols, const float* __restrict__ x,
                                  const float* __restrict__ gamma, const float* __restrict__ beta,
                                  float eps, bool rms, float* __restrict__ stats,
                                  float* __restrict__ y) {
  __shared__ double part[kThreadsPerRow];
  const int64_t r = blockIdx.x;
  const float* xr = x + r * cols;
  double s = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += kThreadsPerRow) s += xr[c];
  const double mean = row_sum(s, part) / static_cast<double>(cols);
  double ss = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += kThreadsPerRow) {
    const double d = xr[c] - mean;
    ss += d * d;
  }
  const double var = row_sum(ss, part) / static_cast<double>(cols);
  const auto m = static_cast<float>(mean);
  const auto inv = static_cast<float>(1.0 / sqrt(var + static_cast<double>(eps)));
  if (threadIdx.x == 0) {
    stats[2 * r] = m;
    stats[2 * r + 1] = inv;
  }
  float* yr = y + r * cols;
  for (int64_t c = threadIdx.x; c < cols; c += kThreadsPerRow)
    yr[c] = lnorm::unit(xr[c], m, inv, rms) * (gamma != nullptr ? gamma[c] : 1.0f) +
            (beta != nullptr ? beta[c] : 0.0f);
}

__global__ void ln_backward_kernel(int64_t cols, const float* __restrict__ dy,
                                   const float* __restrict__ x, const float* __restrict__ gamma,
                                   const float* __restrict__ stats, bool rms,
                                   float* __restrict__ dx) {
  __shared__ double part[kThreadsPerRow];
  const int64_t r = blockIdx.x;
  const float* xr = x + r * cols;
  const float* dr = dy + r * cols;
  const float m = stats[2 * r], inv = stats[2 * r + 1];
  double sg = 0.0, sgu = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += kThreadsPerRow) {
    const float g = dr[c] * (gamma != nullptr ? gamma[c] : 1.0f);
    sg += g;
    sgu += static_cast<double>(g) * lnorm::unit(xr[c], m, inv, rms);
  }
  const auto mean_g = static_cast<float>(row_sum(sg, part) / static_cast<double>(cols));
  const auto mean_gu = static_cast<float>(row_sum(sgu, part) / static_cast<double>(cols));
  float* out = dx + r * cols;
  for (int64_t c = threadIdx.x; c < cols; c += kThreadsPerRow) {
    const float g = dr[c] * (gamma != nullptr ? gamma[c] : 1.0f);
    out[c] = lnorm::backward(g, (xr[c] - m) * inv, inv, mean_g, mean_gu, rms);
  }
}

// dgamma = sum of dy * unit(x) and dbeta = sum of dy over the rows, in double.
struct LnParamTerm {
  const float* dy;
  const float* x;
  const float* stats;
  bool rms;
  int64_t cols;
  struct Col {};
  __device__ Col begin(int64_t) const { return {}; }
  __device__ void add(Col, int64_t r, int64_t c, double* s) const {
    const float d = dy[r * cols + c];
    s[0] +=
        static_cast<double>(d) * lnorm::unit(x[r * cols + c], stats[2 * r], stats[2 * r + 1], rms);
    s[1] += d;
  }
};
struct LnParamFinish {
  float* dgamma;
  float* dbeta;
  __device__ void operator()(int64_t c, const double* t) const {
    if (dgamma != nullptr) dgamma[c] = static_cast<float>(t[0]);
    if (dbeta != nullptr) dbeta[c] = static_cast<float>(t[1]);
  }
};

}  // namespace

void CudaBackend::layer_norm_forward(int64_t rows, int64_t cols, const float* x, const float* gamma,
                                     const float* beta, float eps, bool rms, float* stats,
                                     float* y) {
  if (rows <= 0 || cols <= 0) return;
  MR_CHECK(rows < (int64_t{1} << 31), shape, "too many rows for one layer_norm call: ", rows);
  use_device(ordinal_);
  ln_forward_kernel<<<static_cast<unsigned>(rows), kThreadsPerRow, 0, stream_>>>(
      cols, x, gamma, beta, eps, rms, stats, y);
  cuda::check_launch("ln_forward_kernel", ordinal_);
}

void CudaBackend::layer_norm_backward(int64_t rows, int64_t cols, const float* dy, const float* x,
                                      const float* gamma, const float* stats, bool rms, float* dx,
                                      float* dgamma, float* dbeta) {
  if (cols <= 0) return;
  MR_CHECK(rows < (int64_t{1} << 31), shape, "too many rows for one layer_norm call: ", rows);
  use_device(ordinal_);
  if (dx != nullptr && rows > 0) {
    ln_backward_kernel<<<static_cast<unsigned>(rows), kThreadsPerRow, 0, stream_>>>(
        cols, dy, x, gamma, stats, rms, dx);
    cuda::check_launch("ln_backward_kernel", ordinal_);
  }
  if (dgamma == nullptr && dbeta == nullptr) return;
  cuda::column_reduce<2, double>(stream_, ordinal_, column_partials(), rows, cols,
                                 LnParamTerm{dy, x, stats, rms, cols}, LnParamFinish{dgamma, dbeta},
                                 "layer_norm param-grad kernels");
}

}  // namespace mr
