// CUDA embedding ops.
// - Lookup: one thread per output element. A bad index (not an integer in
//   0..input_dim-1) is never read: its row is written as zeros and its
//   position and value go to the backend's status word (the bad-label word
//   of cuda_loss.cu, with the top bit kIndexStatusTag set), which the next
//   download()/synchronize() turns into mr::Error (value).
// - Gradient without float atomics: thread (c, b) owns column c of the
//   vocabulary rows b*kRowsPerOwner .. (b+1)*kRowsPerOwner-1; it zeroes them,
//   then scans all indices in order and adds dy[i, c] when idx[i] is one of
//   its rows. Every element's sum is taken in index order (the CPU's order),
//   and no two threads write the same element.
#include <cstring>

#include "backends/common/layer_norm_math.h"
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace mr {

namespace {

constexpr int64_t kRowsPerOwner = 64;
constexpr int kOwnerLanes = 8;  // row blocks per CUDA block (threadIdx.y)

__global__ void embedding_forward_kernel(int64_t n, int64_t input_dim, int64_t output_dim,
                                         const float* __restrict__ idx,
                                         const float* __restrict__ table, float* __restrict__ y,
                                         unsigned long long* status) {
  const int64_t total = n * output_dim;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{blockDim.x} * gridDim.x) {
    const int64_t i = e / output_dim;
    const int64_t c = e - i * output_dim;
    const float v = idx[i];
    if (lnorm::valid_index(v, input_dim)) {
      y[e] = table[static_cast<int64_t>(v) * output_dim + c];
    } else {
      y[e] = 0.0f;
      if (c == 0) {
        unsigned bits = 0;
        memcpy(&bits, &v, sizeof(bits));
        atomicMin(status, kIndexStatusTag | (static_cast<unsigned long long>(i) << 32) | bits);
      }
    }
  }
}

__global__ void embedding_backward_kernel(int64_t n, int64_t input_dim, int64_t output_dim,
                                          const float* __restrict__ idx,
                                          const float* __restrict__ dy,
                                          float* __restrict__ dtable) {
  const int64_t c = blockIdx.x * int64_t{32} + threadIdx.x;
  const int64_t b = blockIdx.y * int64_t{kOwnerLanes} + threadIdx.y;
  const int64_t v0 = b * kRowsPerOwner;
  if (c >= output_dim || v0 >= input_dim) return;
  const int64_t v1 = v0 + kRowsPerOwner < input_dim ? v0 + kRowsPerOwner : input_dim;
  for (int64_t v = v0; v < v1; ++v) dtable[v * output_dim + c] = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float f = idx[i];
    if (!lnorm::valid_index(f, input_dim)) continue;  // reported by the lookup
    const auto v = static_cast<int64_t>(f);
    if (v >= v0 && v < v1) dtable[v * output_dim + c] += dy[i * output_dim + c];
  }
}

}  // namespace

void CudaBackend::embedding_forward(int64_t n, int64_t input_dim, int64_t output_dim,
                                    const float* idx, const float* table, float* y) {
  if (n <= 0 || output_dim <= 0) return;
  MR_CHECK(n < (int64_t{1} << 31), shape, "too many indices for one embedding lookup: ", n);
  use_device(ordinal_);
  embedding_forward_kernel<<<cuda::blocks_for(n * output_dim), cuda::kThreads, 0, stream_>>>(
      n, input_dim, output_dim, idx, table, y, label_status());
  cuda::check_launch("embedding_forward_kernel", ordinal_);
  status_input_dim_ = input_dim;
  status_armed_ = true;
}

void CudaBackend::embedding_backward(int64_t n, int64_t input_dim, int64_t output_dim,
                                     const float* idx, const float* dy, float* dtable) {
  if (input_dim <= 0 || output_dim <= 0) return;
  use_device(ordinal_);
  const int64_t owners = (input_dim + kRowsPerOwner - 1) / kRowsPerOwner;
  const dim3 grid(static_cast<unsigned>((output_dim + 31) / 32),
                  static_cast<unsigned>((owners + kOwnerLanes - 1) / kOwnerLanes));
  embedding_backward_kernel<<<grid, dim3(32, kOwnerLanes), 0, stream_>>>(
      n < 0 ? 0 : n, input_dim, output_dim, idx, dy, dtable);
  cuda::check_launch("embedding_backward_kernel", ordinal_);
}

}  // namespace mr
