// Index arithmetic of Backend::strided_copy, shared by the CPU and CUDA
// backends: element e of the box (row-major over c.dims) maps to a source and
// a destination offset; the sum over c.sum_dims runs in row-major order, so
// both backends add the same floats in the same order.
#pragma once

#include <math.h>

#include <cstdint>

#include "core/backend.h"
#include "core/hd.h"

namespace mr {
namespace kmath {

// The box's element count (0 when any extent is 0; 1 for rank 0).
MR_HD int64_t box_size(int rank, const int64_t* dims) {
  int64_t n = 1;
  for (int k = 0; k < rank; ++k) n *= dims[k];
  return n;
}

// Source and destination offsets of element e of the box.
MR_HD void strided_offsets(const StridedCopy& c, int64_t e, int64_t* src, int64_t* dst) {
  int64_t s = 0, d = 0;
  for (int k = c.rank - 1; k >= 0; --k) {
    const int64_t i = e % c.dims[k];
    e /= c.dims[k];
    s += i * c.src_stride[k];
    d += i * c.dst_stride[k];
  }
  *src = s;
  *dst = d;
}

// sum_j src[j's offset], j over the sum box in row-major order.
MR_HD float strided_sum(const StridedCopy& c, const float* src) {
  const int64_t n = box_size(c.sum_rank, c.sum_dims);
  float acc = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    int64_t e = j, off = 0;
    for (int k = c.sum_rank - 1; k >= 0; --k) {
      off += (e % c.sum_dims[k]) * c.sum_stride[k];
      e /= c.sum_dims[k];
    }
    acc += src[off];
  }
  return acc;
}

// NaN when a or b is NaN (TensorFlow's maximum / minimum).
MR_HD float extremum_of(bool is_max, float a, float b) {
  if (a != a || b != b) return a != a ? a : b;
  return is_max ? (a >= b ? a : b) : (a <= b ? a : b);
}

// Dot's normalize (Keras' l2_normalize) on one row; see Backend::l2_normalize_rows.
constexpr double kL2Eps = 1e-12;
MR_HD double row_inv_norm(int64_t cols, const float* x, bool* clamped) {
  double s = 0.0;
  for (int64_t c = 0; c < cols; ++c) s += static_cast<double>(x[c]) * x[c];
  *clamped = s < kL2Eps;
  return 1.0 / sqrt(*clamped ? kL2Eps : s);
}
MR_HD void l2_normalize_row(int64_t cols, const float* x, float* y) {
  bool clamped = false;
  const double inv = row_inv_norm(cols, x, &clamped);
  for (int64_t c = 0; c < cols; ++c) y[c] = static_cast<float>(x[c] * inv);
}
MR_HD void l2_normalize_row_backward(int64_t cols, const float* x, const float* dy, float* dx) {
  bool clamped = false;
  const double inv = row_inv_norm(cols, x, &clamped);
  double dot = 0.0;  // <dy, y>
  if (!clamped)
    for (int64_t c = 0; c < cols; ++c) dot += static_cast<double>(dy[c]) * (x[c] * inv);
  for (int64_t c = 0; c < cols; ++c) dx[c] = static_cast<float>((dy[c] - x[c] * inv * dot) * inv);
}

}  // namespace kmath
}  // namespace mr
