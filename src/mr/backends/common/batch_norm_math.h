// Per-element batch-normalization formulas, shared by the CPU and CUDA
// kernels so both compute the same arithmetic (MR_HD: core/hd.h).
#pragma once

#include <cmath>

#include "core/hd.h"

namespace mr {
namespace bn {

MR_HD float inv_std(float var, float eps) { return 1.0f / sqrtf(var + eps); }

MR_HD float forward(float x, float mean, float inv_std, float gamma, float beta) {
  return (x - mean) * inv_std * gamma + beta;
}

// dx of one element given the column's (already reduced) sums.
MR_HD float backward(float dy, float xhat, float gamma, float inv_std, float mean_dy,
                     float mean_dy_xhat) {
  return gamma * inv_std * (dy - mean_dy - xhat * mean_dy_xhat);
}

}  // namespace bn
}  // namespace mr
