// CUDA embedding ops.
// - Lookup: one thread per output element. A bad index (not an integer in
//   0..input_dim-1) is never read: its row is written as zeros and its
//   position and value go to the backend's status word (the bad-label word
//   of cuda_loss.cu, with the top bit kIndexStatusTag set; positions past
//   kStatusMaxPosition saturate), which the next download()/synchronize()
//   turns into mr::Error (value).
// - Gradient without float atomics, in work proportional to the indices:
//   the n indices (as int keys, a bad one as input_dim, sorted last) are
//   sorted with their positions by cub's radix sort, which is stable, so
//   each vocabulary row's positions come out in increasing order; after the
//   table is zeroed, thread (s, c) of a row's first sorted position s adds
//   dy[i, c] over that row's positions in that order into dtable[v, c]. Every
//   element's sum is taken in index order from 0 (the CPU's order, bit for
//   bit), no two threads write the same element, and nothing depends on the
//   vocabulary size but the zeroing (1-D grid-stride grids: any size).
//   The sort's buffers grow on demand (the first, eager step of a shape, as
//   the other lazy scratch: a captured step never grows them).
#include <cstring>
#include <cub/device/device_radix_sort.cuh>

#include "backends/common/layer_norm_math.h"
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace mr {

namespace {

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
        atomicMin(status, kIndexStatusTag | status_position(i) | bits);
      }
    }
  }
}

// keys[i]: idx[i] as an int, input_dim when it is not a valid index;
// pos[i] = i.
__global__ void embedding_keys_kernel(int64_t n, int64_t input_dim, const float* __restrict__ idx,
                                      int* __restrict__ keys, int* __restrict__ pos) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const float f = idx[i];
    keys[i] =
        static_cast<int>(lnorm::valid_index(f, input_dim) ? static_cast<int64_t>(f) : input_dim);
    pos[i] = static_cast<int>(i);
  }
}

// Thread (s, c), s a sorted position starting a vocabulary row's run: that
// row's column c, summed over the run's positions in increasing order.
__global__ void embedding_grad_kernel(int64_t n, int64_t input_dim, int64_t output_dim,
                                      const int* __restrict__ keys, const int* __restrict__ pos,
                                      const float* __restrict__ dy, float* __restrict__ dtable) {
  const int64_t total = n * output_dim;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{blockDim.x} * gridDim.x) {
    const int64_t s = e / output_dim, c = e - s * output_dim;
    const int key = keys[s];
    if (key >= input_dim || (s > 0 && keys[s - 1] == key)) continue;  // bad, or not a run's start
    float acc = 0.0f;
    for (int64_t t = s; t < n && keys[t] == key; ++t) acc += dy[int64_t{pos[t]} * output_dim + c];
    dtable[int64_t{key} * output_dim + c] = acc;
  }
}

// Bits of the sort keys 0..input_dim.
int key_bits(int64_t input_dim) {
  int b = 1;
  while (b < 31 && (int64_t{1} << b) <= input_dim) ++b;
  return b;
}

size_t align256(size_t b) { return (b + 255) / 256 * 256; }

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
  MR_CHECK(n < (int64_t{1} << 31) && input_dim < (int64_t{1} << 31) - 1, shape,
           "embedding gradient of ", n, " indices over ", input_dim,
           " rows: both must stay below 2^31");
  use_device(ordinal_);
  fill(input_dim * output_dim, dtable, 0.0f);
  if (n <= 0) return;
  // The sort's buffers: keys and positions in and out, then cub's storage.
  const size_t ints = align256(static_cast<size_t>(n) * sizeof(int));
  size_t temp = 0;
  const int bits = key_bits(input_dim);
  MR_CUDA_CALL(cub::DeviceRadixSort::SortPairs(
                   nullptr, temp, static_cast<const int*>(nullptr), static_cast<int*>(nullptr),
                   static_cast<const int*>(nullptr), static_cast<int*>(nullptr),
                   static_cast<int>(n), 0, bits, stream_.get()),
               ordinal_);
  const size_t need = 4 * ints + align256(temp);
  if (need > embed_sort_bytes_) {
    embed_sort_ = allocate(need);
    embed_sort_bytes_ = need;
  }
  char* base = static_cast<char*>(embed_sort_.get());
  int* keys_in = reinterpret_cast<int*>(base);
  int* keys_out = reinterpret_cast<int*>(base + ints);
  int* pos_in = reinterpret_cast<int*>(base + 2 * ints);
  int* pos_out = reinterpret_cast<int*>(base + 3 * ints);
  embedding_keys_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, input_dim, idx,
                                                                             keys_in, pos_in);
  cuda::check_launch("embedding_keys_kernel", ordinal_);
  MR_CUDA_CALL(
      cub::DeviceRadixSort::SortPairs(base + 4 * ints, temp, keys_in, keys_out, pos_in, pos_out,
                                      static_cast<int>(n), 0, bits, stream_.get()),
      ordinal_);
  embedding_grad_kernel<<<cuda::blocks_for(n * output_dim), cuda::kThreads, 0, stream_>>>(
      n, input_dim, output_dim, keys_out, pos_out, dy, dtable);
  cuda::check_launch("embedding_grad_kernel", ordinal_);
}

}  // namespace mr
