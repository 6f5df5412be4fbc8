// CUDA backend: the element-wise, broadcasting and reduction ops of traced
// graphs (contracts: core/backend.h, "i15"; formulas: common/op_math.h, the
// CPU's). Element-wise kernels grid-stride over the out elements; the op kind
// is a kernel argument, uniform across a launch. Reductions and the softmax
// family run one thread per (o, i) output, looping over the axis in
// increasing order: the same arithmetic in the same order as the CPU, no
// atomics, so results are deterministic. A reduction over a long axis into
// few outputs (long_axis(): a full reduction of 1M floats would be one
// thread) runs one block per output instead: kAxisThreads threads each take
// a fixed stride of the axis, then a fixed tree combines them (sums in
// double, rounded once): still deterministic and a function of the shape
// only; sums then equal the CPU's whenever the double sum is exact (the
// common case) and are otherwise within float rounding of it. Its backward
// is element-wise (max / min first count the ties, one block per output).
// All launches go on the replica's stream; nothing synchronises or
// allocates.
#include <math.h>

#include "backends/common/op_math.h"
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"
#include "core/op_kinds.h"

namespace mr {

namespace {

__global__ void unary_kernel(UnaryOp op, int64_t n, const float* x, float* y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    y[i] = opmath::unary_value(op, x[i]);
}

__global__ void unary_backward_kernel(UnaryOp op, int64_t n, const float* x, const float* y,
                                      const float* dy, float* dx) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    dx[i] = opmath::unary_grad(op, x[i], y != nullptr ? y[i] : 0.0f, dy[i]);
}

__global__ void binary_kernel(BinaryOp op, Broadcast g, const float* a, const float* b,
                              float* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < g.size;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[kMaxBroadcastOperands];
    opmath::broadcast_offsets(g, i, off);
    out[i] = opmath::binary_value(op, a[off[0]], b[off[1]]);
  }
}

__global__ void binary_backward_kernel(BinaryOp op, Broadcast g, const float* a, const float* b,
                                       const float* dout, float* ga, float* gb) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < g.size;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[kMaxBroadcastOperands];
    opmath::broadcast_offsets(g, i, off);
    float da = 0.0f, db = 0.0f;
    opmath::binary_grad(op, a[off[0]], b[off[1]], dout[i], &da, &db);
    if (ga != nullptr) ga[i] = da;
    if (gb != nullptr) gb[i] = db;
  }
}

__global__ void where_kernel(Broadcast g, const float* cond, const float* a, const float* b,
                             float* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < g.size;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[kMaxBroadcastOperands];
    opmath::broadcast_offsets(g, i, off);
    out[i] = cond[off[0]] != 0.0f ? a[off[1]] : b[off[2]];
  }
}

__global__ void where_backward_kernel(Broadcast g, const float* cond, const float* dout, float* ga,
                                      float* gb) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < g.size;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[kMaxBroadcastOperands];
    opmath::broadcast_offsets(g, i, off);
    const bool pick_a = cond[off[0]] != 0.0f;
    if (ga != nullptr) ga[i] = pick_a ? dout[i] : 0.0f;
    if (gb != nullptr) gb[i] = pick_a ? 0.0f : dout[i];
  }
}

// One thread per output (o, i) = j; consecutive threads read consecutive i
// (coalesced when inner > 1).
__global__ void reduce_kernel(ReduceOp op, int64_t n, int64_t extent, int64_t inner, const float* x,
                              float* y) {
  for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < n;
       j += int64_t{blockDim.x} * gridDim.x) {
    y[j] = opmath::reduce_one(op, extent, inner, x + opmath::axis_base(j, extent, inner));
  }
}

__global__ void reduce_backward_kernel(ReduceOp op, int64_t n, int64_t extent, int64_t inner,
                                       const float* x, const float* y, const float* dy, float* dx) {
  for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < n;
       j += int64_t{blockDim.x} * gridDim.x) {
    const int64_t base = opmath::axis_base(j, extent, inner);
    opmath::reduce_grad_one(op, extent, inner, x == nullptr ? nullptr : x + base,
                            y == nullptr ? 0.0f : y[j], dy[j], dx + base);
  }
}

// ---- long axes, few outputs: one block per output ----
constexpr int kAxisThreads = 256;
constexpr int64_t kLongAxis = 1024;
// At most this many outputs: max / min backward keep one tie count per
// output in the backend's reduction scratch (4096 doubles, preallocated).
constexpr int64_t kFewOutputs = 4096;
bool long_axis(int64_t n, int64_t extent) { return extent >= kLongAxis && n <= kFewOutputs; }

// Folds b into a: sum in double; max / min as reduce_step (NaN-propagating)
// on the float values (exact in double).
__device__ __forceinline__ double fold(ReduceOp op, double a, double b) {
  return op == ReduceOp::sum ? a + b
                             : static_cast<double>(opmath::reduce_step(op, static_cast<float>(a),
                                                                       static_cast<float>(b)));
}

// Output blockIdx.x's fold over its axis; counts: the number of elements
// equal to `y` (max / min backward's ties) instead, as a sum of ones.
__device__ __forceinline__ double axis_block_fold(ReduceOp op, int64_t extent, int64_t inner,
                                                  const float* x, const float* y_tie) {
  __shared__ double part[kAxisThreads];
  const int64_t j = blockIdx.x;
  const float* base = x + opmath::axis_base(j, extent, inner);
  const ReduceOp f = y_tie != nullptr ? ReduceOp::sum : op;
  double acc = f == ReduceOp::sum ? 0.0 : static_cast<double>(opmath::reduce_identity(f));
  for (int64_t e = threadIdx.x; e < extent; e += kAxisThreads) {
    const float v = base[e * inner];
    acc = fold(f, acc, y_tie != nullptr ? (v == y_tie[j] ? 1.0 : 0.0) : static_cast<double>(v));
  }
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int half = kAxisThreads / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half)
      part[threadIdx.x] = fold(f, part[threadIdx.x], part[threadIdx.x + half]);
    __syncthreads();
  }
  return part[0];
}

__global__ void reduce_axis_block_kernel(ReduceOp op, int64_t extent, int64_t inner, const float* x,
                                         float* y) {
  const double v = axis_block_fold(op, extent, inner, x, nullptr);
  if (threadIdx.x == 0) y[blockIdx.x] = static_cast<float>(v);
}

__global__ void tie_count_kernel(int64_t extent, int64_t inner, const float* x, const float* y,
                                 double* count) {
  const double v = axis_block_fold(ReduceOp::max, extent, inner, x, y);
  if (threadIdx.x == 0) count[blockIdx.x] = v;
}

// One thread per dx element: reduce_grad_one's formulas (count: the ties of
// its output, exact as a float).
__global__ void reduce_backward_elements_kernel(ReduceOp op, int64_t total, int64_t extent,
                                                int64_t inner, const float* x, const float* y,
                                                const float* dy, const double* count, float* dx) {
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < total;
       k += int64_t{blockDim.x} * gridDim.x) {
    const int64_t j = (k / (extent * inner)) * inner + k % inner;
    if (op == ReduceOp::sum) {
      dx[k] = dy[j];
    } else {
      const auto c = static_cast<float>(count[j]);
      dx[k] = ((x[k] == y[j] ? 1.0f : 0.0f) / c) * dy[j];
    }
  }
}

__global__ void softmax_axis_kernel(SoftmaxOp op, int64_t n, int64_t extent, int64_t inner,
                                    const float* x, float* y) {
  for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < n;
       j += int64_t{blockDim.x} * gridDim.x) {
    const int64_t base = opmath::axis_base(j, extent, inner);
    opmath::softmax_one(op, extent, inner, x + base, op == SoftmaxOp::logsumexp ? y + j : y + base);
  }
}

__global__ void softmax_axis_backward_kernel(SoftmaxOp op, int64_t n, int64_t extent, int64_t inner,
                                             const float* x, const float* y, const float* dy,
                                             float* dx) {
  for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < n;
       j += int64_t{blockDim.x} * gridDim.x) {
    const int64_t base = opmath::axis_base(j, extent, inner);
    const bool lse = op == SoftmaxOp::logsumexp;
    opmath::softmax_grad_one(op, extent, inner, x == nullptr ? nullptr : x + base,
                             lse ? y + j : y + base, lse ? dy + j : dy + base, dx + base);
  }
}

}  // namespace

void CudaBackend::unary(UnaryOp op, int64_t n, const float* x, float* y) {
  check_op(op, "unary");
  if (n <= 0) return;
  use_device(ordinal_);
  unary_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(op, n, x, y);
  cuda::check_launch("unary_kernel", ordinal_);
}

void CudaBackend::unary_backward(UnaryOp op, int64_t n, const float* x, const float* y,
                                 const float* dy, float* dx) {
  check_op(op, "unary_backward");
  if (n <= 0) return;
  const bool reads_y = opmath::unary_reads_y(op);
  MR_CHECK(!reads_y || y != nullptr, internal, "unary_backward(", op_name(op),
           "): needs the forward output y");
  use_device(ordinal_);
  unary_backward_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(
      op, n, x, reads_y ? y : nullptr, dy, dx);
  cuda::check_launch("unary_backward_kernel", ordinal_);
}

void CudaBackend::binary(BinaryOp op, const Broadcast& g, const float* a, const float* b,
                         float* out) {
  check_op(op, "binary");
  check_broadcast(g, 2, "binary");
  if (g.size <= 0) return;
  use_device(ordinal_);
  binary_kernel<<<cuda::blocks_for(g.size), cuda::kThreads, 0, stream_>>>(op, g, a, b, out);
  cuda::check_launch("binary_kernel", ordinal_);
}

void CudaBackend::binary_backward(BinaryOp op, const Broadcast& g, const float* a, const float* b,
                                  const float* dout, float* ga, float* gb) {
  check_op(op, "binary_backward");
  check_broadcast(g, 2, "binary_backward");
  if (g.size <= 0 || (ga == nullptr && gb == nullptr)) return;
  use_device(ordinal_);
  binary_backward_kernel<<<cuda::blocks_for(g.size), cuda::kThreads, 0, stream_>>>(op, g, a, b,
                                                                                   dout, ga, gb);
  cuda::check_launch("binary_backward_kernel", ordinal_);
}

void CudaBackend::where(const Broadcast& g, const float* cond, const float* a, const float* b,
                        float* out) {
  check_broadcast(g, 3, "where");
  if (g.size <= 0) return;
  use_device(ordinal_);
  where_kernel<<<cuda::blocks_for(g.size), cuda::kThreads, 0, stream_>>>(g, cond, a, b, out);
  cuda::check_launch("where_kernel", ordinal_);
}

void CudaBackend::where_backward(const Broadcast& g, const float* cond, const float* dout,
                                 float* ga, float* gb) {
  check_broadcast(g, 3, "where_backward");
  if (g.size <= 0 || (ga == nullptr && gb == nullptr)) return;
  use_device(ordinal_);
  where_backward_kernel<<<cuda::blocks_for(g.size), cuda::kThreads, 0, stream_>>>(g, cond, dout, ga,
                                                                                  gb);
  cuda::check_launch("where_backward_kernel", ordinal_);
}

void CudaBackend::reduce(ReduceOp op, int64_t outer, int64_t extent, int64_t inner, const float* x,
                         float* y) {
  check_op(op, "reduce");
  check_axis_view(outer, extent, inner, "reduce");
  const int64_t n = outer * inner;
  if (n <= 0) return;
  use_device(ordinal_);
  if (long_axis(n, extent)) {
    reduce_axis_block_kernel<<<static_cast<unsigned>(n), kAxisThreads, 0, stream_>>>(op, extent,
                                                                                     inner, x, y);
    cuda::check_launch("reduce_axis_block_kernel", ordinal_);
    return;
  }
  reduce_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(op, n, extent, inner, x, y);
  cuda::check_launch("reduce_kernel", ordinal_);
}

void CudaBackend::reduce_backward(ReduceOp op, int64_t outer, int64_t extent, int64_t inner,
                                  const float* x, const float* y, const float* dy, float* dx) {
  check_op(op, "reduce_backward");
  check_axis_view(outer, extent, inner, "reduce_backward");
  const int64_t n = outer * inner;
  if (n <= 0 || extent <= 0) return;
  MR_CHECK(op == ReduceOp::sum || (x != nullptr && y != nullptr), internal, "reduce_backward(",
           op_name(op), "): needs the forward's x and y");
  use_device(ordinal_);
  if (long_axis(n, extent)) {
    double* count = nullptr;
    if (op != ReduceOp::sum) {
      count = reduction_scratch(kFewOutputs);  // allocated by the constructor
      tie_count_kernel<<<static_cast<unsigned>(n), kAxisThreads, 0, stream_>>>(extent, inner, x, y,
                                                                               count);
      cuda::check_launch("tie_count_kernel", ordinal_);
    }
    const int64_t total = n * extent;
    reduce_backward_elements_kernel<<<cuda::blocks_for(total), cuda::kThreads, 0, stream_>>>(
        op, total, extent, inner, x, y, dy, count, dx);
    cuda::check_launch("reduce_backward_elements_kernel", ordinal_);
    return;
  }
  reduce_backward_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(op, n, extent, inner,
                                                                              x, y, dy, dx);
  cuda::check_launch("reduce_backward_kernel", ordinal_);
}

void CudaBackend::softmax_axis(SoftmaxOp op, int64_t outer, int64_t extent, int64_t inner,
                               const float* x, float* y) {
  check_op(op, "softmax_axis");
  check_axis_view(outer, extent, inner, "softmax_axis");
  const int64_t n = outer * inner;
  if (n <= 0) return;
  if (extent <= 0) {
    if (op == SoftmaxOp::logsumexp) fill(n, y, -INFINITY);
    return;
  }
  use_device(ordinal_);
  softmax_axis_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(op, n, extent, inner, x,
                                                                           y);
  cuda::check_launch("softmax_axis_kernel", ordinal_);
}

void CudaBackend::softmax_axis_backward(SoftmaxOp op, int64_t outer, int64_t extent, int64_t inner,
                                        const float* x, const float* y, const float* dy,
                                        float* dx) {
  check_op(op, "softmax_axis_backward");
  check_axis_view(outer, extent, inner, "softmax_axis_backward");
  // Only logsumexp reads x (dx = dy exp(x - y)); softmax and log_softmax
  // may be passed x = null, which no kernel offsets or reads.
  MR_CHECK(op != SoftmaxOp::logsumexp || x != nullptr, internal,
           "softmax_axis_backward(logsumexp): needs the forward's x");
  const int64_t n = outer * inner;
  if (n <= 0 || extent <= 0) return;
  use_device(ordinal_);
  softmax_axis_backward_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(
      op, n, extent, inner, x, y, dy, dx);
  cuda::check_launch("softmax_axis_backward_kernel", ordinal_);
}

// ---- i15-fuse: a unary chain in one pass ----
namespace {

// The chain by value (a kernel argument: no device memory, no upload).
struct UnaryChainArgs {
  UnaryOp op[Backend::kMaxUnaryChain];
  float* out[Backend::kMaxUnaryChain];
  int count;
};

// Each thread loads x[i] once and stores every link. Each link's value goes
// through __fmul_rn(v, 1.0f) (exact, never contracted) before the next link
// reads it, so -fmad cannot fuse a link's last multiply into the next link's
// add: every link is rounded to float as in separate unary() launches.
__global__ void unary_chain_kernel(UnaryChainArgs a, int64_t n, const float* x) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    float v = x[i];
    for (int c = 0; c < a.count; ++c) {
      v = __fmul_rn(opmath::unary_value(a.op[c], v), 1.0f);
      a.out[c][i] = v;
    }
  }
}

}  // namespace

void CudaBackend::unary_chain(int64_t n, const UnaryOp* ops, int count, const float* x,
                              float* const* outs) {
  MR_CHECK(count >= 1 && count <= kMaxUnaryChain, internal, "unary_chain: count must be in 1..",
           kMaxUnaryChain, ", got ", count);
  UnaryChainArgs a{};
  for (int c = 0; c < count; ++c) {
    check_op(ops[c], "unary_chain");
    a.op[c] = ops[c];
    a.out[c] = outs[c];
  }
  a.count = count;
  if (n <= 0) return;
  use_device(ordinal_);
  unary_chain_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(a, n, x);
  cuda::check_launch("unary_chain_kernel", ordinal_);
}

}  // namespace mr
