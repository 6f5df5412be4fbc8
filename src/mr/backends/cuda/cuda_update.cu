// CUDA backend: the update-pipeline ops (core/backend.h, issue 13), the
// per-element arithmetic of backends/common/optimizer_math.h (the CPU
// backend's). Segment sums: one block per segment, each thread summing a
// fixed stride in double, then a fixed-shape tree in shared memory, so the
// result depends only on the input (no atomics). Per-segment ops use a 2-D
// grid: y walks the segments, x grid-strides inside one.
#include "backends/common/optimizer_math.h"
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace mr {

namespace {

constexpr unsigned kMaxGridY = 65535;

__global__ void segment_sumsq_kernel(int64_t nseg, const int64_t* __restrict__ seg,
                                     const float* __restrict__ x, double* __restrict__ out) {
  __shared__ double part[cuda::kThreads];
  for (int64_t k = blockIdx.x; k < nseg; k += gridDim.x) {
    const float* p = x + seg[2 * k];
    const int64_t n = seg[2 * k + 1];
    double acc = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += static_cast<double>(p[i]) * p[i];
    part[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[k] = part[0];
    __syncthreads();
  }
}

__global__ void clip_kernel(GradientClip mode, float c, int64_t nseg,
                            const int64_t* __restrict__ seg, float* __restrict__ g,
                            const double* __restrict__ sumsq) {
  float scale = 1.0f;
  if (mode == GradientClip::global_norm) {
    double total = 0.0;
    for (int64_t k = 0; k < nseg; ++k) total += sumsq[k];
    scale = kmath::global_clip_scale(c, total);
  }
  for (int64_t k = blockIdx.y; k < nseg; k += gridDim.y) {
    float* p = g + seg[2 * k];
    const int64_t n = seg[2 * k + 1];
    const double sq = mode == GradientClip::norm ? sumsq[k] : 0.0;
    for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
         i += int64_t{blockDim.x} * gridDim.x) {
      if (mode == GradientClip::value)
        p[i] = kmath::clip_value(p[i], c);
      else if (mode == GradientClip::norm)
        p[i] = kmath::clip_norm_element(p[i], c, sq);
      else
        p[i] = p[i] * scale;
    }
  }
}

__global__ void update_kernel(UpdateRule rule, int64_t n, float* __restrict__ w,
                              const float* __restrict__ g, float* __restrict__ s0,
                              float* __restrict__ s1, const StepScalars* __restrict__ s,
                              UpdateHyper h) {
  if (s->skip != 0.0f) return;  // i14-mpcore: a step skipped by loss scaling
  const StepScalars sc = *s;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    float wi = w[i], a = s0 ? s0[i] : 0.0f, z = s1 ? s1[i] : 0.0f;
    kmath::update_element(rule, wi, g[i], a, z, sc, h);
    w[i] = wi;
    if (s0) s0[i] = a;
    if (s1) s1[i] = z;
  }
}

// r may alias g: each element reads g[i] before it writes r[i].
__global__ void lamb_moments_kernel(int64_t n, float* __restrict__ w, const float* g,
                                    float* __restrict__ m, float* __restrict__ v, float* r,
                                    const StepScalars* __restrict__ s, UpdateHyper h) {
  if (s->skip != 0.0f) return;  // i14-mpcore: a step skipped by loss scaling
  const StepScalars sc = *s;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    float wi = w[i], mi = m[i], vi = v[i], ri = 0.0f;
    kmath::lamb_moments_element(wi, g[i], mi, vi, ri, sc, h);
    w[i] = wi;
    m[i] = mi;
    v[i] = vi;
    r[i] = ri;
  }
}

__global__ void lamb_apply_kernel(int64_t nseg, const int64_t* __restrict__ seg,
                                  float* __restrict__ w, const float* __restrict__ r,
                                  const double* __restrict__ w_sq, const double* __restrict__ r_sq,
                                  const StepScalars* __restrict__ s) {
  if (s->skip != 0.0f) return;  // i14-mpcore: a step skipped by loss scaling
  const float lr = s->lr;
  for (int64_t k = blockIdx.y; k < nseg; k += gridDim.y) {
    const float step = kmath::lamb_ratio(w_sq[k], r_sq[k]) * lr;
    float* wp = w + seg[2 * k];
    const float* rp = r + seg[2 * k];
    const int64_t n = seg[2 * k + 1];
    for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
         i += int64_t{blockDim.x} * gridDim.x)
      wp[i] -= step * rp[i];
  }
}

__global__ void ema_kernel(int64_t n, float* __restrict__ avg, const float* __restrict__ w,
                           const StepScalars* __restrict__ s) {
  if (s->skip != 0.0f) return;  // i14-mpcore: a step skipped by loss scaling
  const float m = s->ema_momentum, one_m = 1.0f - m;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    avg[i] = m * avg[i] + one_m * w[i];
}

__global__ void accumulate_apply_kernel(int64_t n, float* __restrict__ g, float* __restrict__ acc,
                                        float steps) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    g[i] = (g[i] + acc[i]) / steps;
    acc[i] = 0.0f;
  }
}

// The segment table lives on the device, so the x extent is a fixed number
// of blocks per segment (each grid-strides over its segment), not a host
// copy of the longest segment.
dim3 segment_grid(int64_t nseg) {
  constexpr unsigned kBlocksPerSegment = 64;
  const unsigned y = static_cast<unsigned>(nseg < kMaxGridY ? nseg : kMaxGridY);
  return dim3(kBlocksPerSegment, y > 0 ? y : 1);
}

}  // namespace

void CudaBackend::segment_sumsq(int64_t nseg, const int64_t* seg, const float* x, double* out) {
  if (nseg <= 0) return;
  use_device(ordinal_);
  const unsigned blocks = static_cast<unsigned>(nseg < kMaxGridY ? nseg : kMaxGridY);
  segment_sumsq_kernel<<<blocks, cuda::kThreads, 0, stream_>>>(nseg, seg, x, out);
  cuda::check_launch("segment_sumsq_kernel", ordinal_);
}

void CudaBackend::clip_gradients(GradientClip mode, float c, int64_t nseg, const int64_t* seg,
                                 float* g, const double* sumsq) {
  if (nseg <= 0) return;
  use_device(ordinal_);
  clip_kernel<<<segment_grid(nseg), cuda::kThreads, 0, stream_>>>(mode, c, nseg, seg, g, sumsq);
  cuda::check_launch("clip_kernel", ordinal_);
}

void CudaBackend::optimizer_update(UpdateRule rule, int64_t n, float* w, const float* g, float* s0,
                                   float* s1, const StepScalars* s, const UpdateHyper& h) {
  if (n <= 0) return;
  use_device(ordinal_);
  update_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(rule, n, w, g, s0, s1, s, h);
  cuda::check_launch("update_kernel", ordinal_);
}

void CudaBackend::lamb_moments(int64_t n, float* w, const float* g, float* m, float* v, float* r,
                               const StepScalars* s, const UpdateHyper& h) {
  if (n <= 0) return;
  use_device(ordinal_);
  lamb_moments_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, w, g, m, v, r, s, h);
  cuda::check_launch("lamb_moments_kernel", ordinal_);
}

void CudaBackend::lamb_apply(int64_t nseg, const int64_t* seg, float* w, const float* r,
                             const double* w_sq, const double* r_sq, const StepScalars* s) {
  if (nseg <= 0) return;
  use_device(ordinal_);
  lamb_apply_kernel<<<segment_grid(nseg), cuda::kThreads, 0, stream_>>>(nseg, seg, w, r, w_sq, r_sq,
                                                                        s);
  cuda::check_launch("lamb_apply_kernel", ordinal_);
}

void CudaBackend::ema_update(int64_t n, float* avg, const float* w, const StepScalars* s) {
  if (n <= 0) return;
  use_device(ordinal_);
  ema_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, avg, w, s);
  cuda::check_launch("ema_kernel", ordinal_);
}

void CudaBackend::accumulate_apply(int64_t n, float* g, float* acc, float steps) {
  if (n <= 0) return;
  use_device(ordinal_);
  accumulate_apply_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, g, acc, steps);
  cuda::check_launch("accumulate_apply_kernel", ordinal_);
}

}  // namespace mr
