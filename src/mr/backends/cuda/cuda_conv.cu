// Convolution on the GPU as im2col + cuBLAS (the backend's gemm), with the
// column layout of backends/cpu/cpu_conv.cpp: per group an M x Kg matrix
// (M = rows * out_h * out_w positions, Kg = k_h * k_w * in_c/groups) in the
// kernel's (k_h, k_w, c) order, zeros where a window reads padding.
// col2im is a gather (each dx element sums the column entries that read it,
// in (k_h, k_w) order): no atomics, so results repeat bit for bit.
// A geometry that prepare_conv() planned for cuDNN runs there instead
// (cuda_conv_cudnn.cu); pointwise convolutions stay a single cuBLAS gemm.
// The three passes of one (g, rows) always take the same path.
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace mr {

namespace {

__global__ void im2col_kernel(ConvGeometry g, int64_t rows, const float* __restrict__ x,
                              float* __restrict__ col) {
  const int64_t cg = g.in_c / g.groups, kg = g.k_h * g.k_w * cg;
  const int64_t m = rows * g.out_h * g.out_w;
  const int64_t total = m * kg * g.groups;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    // i = ((grp * m + pos) * kg) + (ky * k_w + kx) * cg + c
    const int64_t c = i % cg;
    const int64_t kk = (i / cg) % (g.k_h * g.k_w);
    const int64_t pos = (i / kg) % m;
    const int64_t grp = i / (kg * m);
    const int64_t ky = kk / g.k_w, kx = kk % g.k_w;
    const int64_t ox = pos % g.out_w, oy = (pos / g.out_w) % g.out_h, n = pos / (g.out_w * g.out_h);
    const int64_t iy = oy * g.stride_h - g.pad_top + ky * g.dil_h;
    const int64_t ix = ox * g.stride_w - g.pad_left + kx * g.dil_w;
    float v = 0.0f;
    if (iy >= 0 && iy < g.in_h && ix >= 0 && ix < g.in_w)
      v = x[((n * g.in_h + iy) * g.in_w + ix) * g.in_c + grp * cg + c];
    col[i] = v;
  }
}

__global__ void col2im_kernel(ConvGeometry g, int64_t rows, const float* __restrict__ col,
                              float* __restrict__ dx) {
  const int64_t cg = g.in_c / g.groups, kg = g.k_h * g.k_w * cg;
  const int64_t m = rows * g.out_h * g.out_w;
  const int64_t total = rows * g.in_h * g.in_w * g.in_c;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t ch = i % g.in_c;
    const int64_t ix = (i / g.in_c) % g.in_w, iy = (i / (g.in_c * g.in_w)) % g.in_h;
    const int64_t n = i / (g.in_c * g.in_w * g.in_h);
    const int64_t grp = ch / cg, c = ch % cg;
    float s = 0.0f;
    for (int64_t ky = 0; ky < g.k_h; ++ky) {
      const int64_t ty = iy + g.pad_top - ky * g.dil_h;
      if (ty < 0 || ty % g.stride_h != 0) continue;
      const int64_t oy = ty / g.stride_h;
      if (oy >= g.out_h) continue;
      for (int64_t kx = 0; kx < g.k_w; ++kx) {
        const int64_t tx = ix + g.pad_left - kx * g.dil_w;
        if (tx < 0 || tx % g.stride_w != 0) continue;
        const int64_t ox = tx / g.stride_w;
        if (ox >= g.out_w) continue;
        const int64_t pos = (n * g.out_h + oy) * g.out_w + ox;
        s += col[(grp * m + pos) * kg + (ky * g.k_w + kx) * cg + c];
      }
    }
    dx[i] = s;
  }
}

void check_geometry(const ConvGeometry& g, int64_t rows, const char* op) {
  MR_CHECK(rows >= 0 && g.groups >= 1 && g.in_c % g.groups == 0 && g.out_c % g.groups == 0 &&
               g.out_h >= 1 && g.out_w >= 1 && g.k_h >= 1 && g.k_w >= 1,
           shape, op, ": bad geometry (rows ", rows, ", groups ", g.groups, ", in_c ", g.in_c,
           ", out_c ", g.out_c, ", out ", g.out_h, "x", g.out_w, ")");
}

}  // namespace

void CudaBackend::conv_forward(const ConvGeometry& g, int64_t rows, const float* x, const float* w,
                               float* y, float* col) {
  check_geometry(g, rows, "conv_forward");
  use_device(ordinal_);  // before any launch (cuDNN's transpose included)
  if (rows == 0) return;
  const int64_t m = rows * g.out_h * g.out_w, f = g.out_c, fg = f / g.groups;
  if (g.pointwise()) {
    gemm(false, false, m, f, g.in_c, 1.0f, x, g.in_c, w, f, 0.0f, y, f);
    return;
  }
  if (cudnn_forward(g, rows, x, w, y)) return;
  const int64_t kg = g.k_h * g.k_w * (g.in_c / g.groups);
  im2col_kernel<<<cuda::blocks_for(m * kg * g.groups, 65535), cuda::kThreads, 0, stream_>>>(g, rows,
                                                                                            x, col);
  cuda::check_launch("im2col_kernel", ordinal_);
  for (int64_t grp = 0; grp < g.groups; ++grp)
    gemm(false, false, m, fg, kg, 1.0f, col + grp * m * kg, kg, w + grp * fg, f, 0.0f, y + grp * fg,
         f);
}

void CudaBackend::conv_backward_filter(const ConvGeometry& g, int64_t rows, const float* x,
                                       const float* dy, float* dw, float* col) {
  check_geometry(g, rows, "conv_backward_filter");
  use_device(ordinal_);  // before any launch (cuDNN's transpose included)
  const int64_t m = rows * g.out_h * g.out_w, f = g.out_c, fg = f / g.groups;
  const int64_t kg = g.k_h * g.k_w * (g.in_c / g.groups);
  if (rows == 0) {
    fill(kg * f, dw, 0.0f);
    return;
  }
  if (!g.pointwise() && cudnn_backward_filter(g, rows, x, dy, dw)) return;
  const float* a = g.pointwise() ? x : col;  // forward left the columns in col
  for (int64_t grp = 0; grp < g.groups; ++grp)
    gemm(true, false, kg, fg, m, 1.0f, a + grp * m * kg, kg, dy + grp * fg, f, 0.0f, dw + grp * fg,
         f);
}

void CudaBackend::conv_backward_data(const ConvGeometry& g, int64_t rows, const float* dy,
                                     const float* w, float* dx, float* col) {
  check_geometry(g, rows, "conv_backward_data");
  use_device(ordinal_);  // before any launch (cuDNN's transpose included)
  if (rows == 0) return;
  const int64_t m = rows * g.out_h * g.out_w, f = g.out_c, fg = f / g.groups;
  if (g.pointwise()) {
    gemm(false, true, m, g.in_c, f, 1.0f, dy, f, w, f, 0.0f, dx, g.in_c);
    return;
  }
  if (cudnn_backward_data(g, rows, dy, w, dx)) return;
  const int64_t kg = g.k_h * g.k_w * (g.in_c / g.groups);
  for (int64_t grp = 0; grp < g.groups; ++grp)
    gemm(false, true, m, kg, fg, 1.0f, dy + grp * fg, f, w + grp * fg, f, 0.0f, col + grp * m * kg,
         kg);
  const int64_t n = rows * g.in_h * g.in_w * g.in_c;
  col2im_kernel<<<cuda::blocks_for(n, 65535), cuda::kThreads, 0, stream_>>>(g, rows, col, dx);
  cuda::check_launch("col2im_kernel", ordinal_);
}

}  // namespace mr
