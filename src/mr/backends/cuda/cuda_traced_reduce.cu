// Backend::traced_reduce on CUDA (contract: core/backend.h, "i15-users";
// formulas: common/traced_reduce_math.h, shared with the CPU). A two-pass
// block-per-segment reduction: the rows are cut into segments (their number
// and size a function of rows only); in the block of a segment, thread t
// takes its rows t, t + kBlock, ... and sums in double in that order, a
// fixed tree adds the threads' sums into the segment's partials (the
// backend's reduction scratch, preallocated); one block then adds the
// partials by the same pattern and thread 0 adds the totals to the device
// doubles. No atomics, the result depends only on the shape, and nothing is
// read back to the host; one segment finishes in its own block. The output
// gradient is a grid-stride kernel (batched) or written by the finishing
// block (not batched). All launch on the backend's stream.
#include "backends/common/traced_reduce_math.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_segments.h"
#include "core/error.h"

namespace mr {

namespace {

constexpr int kBlock = 256;
// Rows per segment at least, and segments at most (two partials each in
// the backend's reduction scratch of 4096 doubles, allocated up front).
constexpr int64_t kSegmentRows = int64_t{8} * kBlock;
constexpr int64_t kMaxSegments = 2048;

using cuda::Segments;
Segments segments_of(int64_t rows) { return cuda::segments_of(rows, kSegmentRows, kMaxSegments); }

// Tree sum of the block's (ps, pc) into ps[0], pc[0], in a fixed pattern;
// every thread may read the totals after it.
__device__ __forceinline__ void tree_sum2(double s, double c, double* ps, double* pc) {
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
}

struct ReduceOut {
  bool batched;
  int64_t width;
  const float* out;
  float grad_scale;
  float* d_out;  // not batched only (the batched gradient is traced_grad_kernel's)
  double* sum;
  double* count;
};

// The finishing block: adds the totals; not batched: the batch mean v times
// the weights' total, and the output gradient grad_scale * W / width.
__device__ __forceinline__ void finish_totals(double s_total, double total, const ReduceOut& o) {
  if (threadIdx.x == 0) {
    *o.sum += o.batched ? s_total : trmath::mean(o.out, o.width) * total;
    if (o.count != nullptr) *o.count += total;
  }
  if (!o.batched && o.d_out != nullptr) {
    const float g = trmath::grad(o.grad_scale, total, o.width);
    for (int64_t j = threadIdx.x; j < o.width; j += kBlock) o.d_out[j] = g;
  }
}

// Segment blockIdx.x: sums of w_r * mean(row r) (batched) and of w_r.
__global__ void traced_reduce_kernel(int64_t rows, int64_t seg, const float* w, ReduceOut o,
                                     double* partials) {
  __shared__ double ps[kBlock];
  __shared__ double pc[kBlock];
  const int64_t r0 = blockIdx.x * seg, r1 = r0 + seg < rows ? r0 + seg : rows;
  double s = 0.0, c = 0.0;
  for (int64_t r = r0 + threadIdx.x; r < r1; r += kBlock) {
    const double wr = trmath::weight(w, r);
    if (o.batched) s += wr * trmath::mean(o.out + r * o.width, o.width);
    c += wr;
  }
  tree_sum2(s, c, ps, pc);
  if (gridDim.x == 1) {
    finish_totals(ps[0], pc[0], o);
  } else if (threadIdx.x == 0) {
    partials[2 * blockIdx.x] = ps[0];
    partials[2 * blockIdx.x + 1] = pc[0];
  }
}

// One block: the segments' partials, added by the same pattern.
__global__ void traced_reduce_finish_kernel(int64_t segments, const double* partials, ReduceOut o) {
  __shared__ double ps[kBlock];
  __shared__ double pc[kBlock];
  double s = 0.0, c = 0.0;
  for (int64_t b = threadIdx.x; b < segments; b += kBlock) {
    s += partials[2 * b];
    c += partials[2 * b + 1];
  }
  tree_sum2(s, c, ps, pc);
  finish_totals(ps[0], pc[0], o);
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
  const ReduceOut o{batched, width, out, grad_scale, batched ? nullptr : d_out, sum, count};
  const Segments sg = segments_of(rows);
  double* partials = reduction_scratch(2 * kMaxSegments);  // allocated by the constructor
  traced_reduce_kernel<<<static_cast<unsigned>(sg.count), kBlock, 0, stream_>>>(
      rows, sg.size, sample_weight, o, partials);
  cuda::check_launch("traced_reduce_kernel", ordinal_);
  if (sg.count > 1) {
    traced_reduce_finish_kernel<<<1, kBlock, 0, stream_>>>(sg.count, partials, o);
    cuda::check_launch("traced_reduce_finish_kernel", ordinal_);
  }
  if (batched && d_out != nullptr && rows > 0) {
    traced_grad_kernel<<<cuda::blocks_for(rows * width), cuda::kThreads, 0, stream_>>>(
        rows, width, sample_weight, grad_scale, d_out);
    cuda::check_launch("traced_grad_kernel", ordinal_);
  }
}

}  // namespace mr
