// Per-element formulas of the layer-normalization, embedding and feature
// normalization ops, shared by the CPU and CUDA kernels so both compute the
// same arithmetic (MR_HD: core/hd.h). Row and column sums are the kernels'.
#pragma once

#include <cmath>

#include "core/hd.h"

namespace mr {
namespace lnorm {

// (x - mean) * inv, or x * inv for Keras' rms_scaling.
MR_HD float unit(float x, float mean, float inv, bool rms) {
  return rms ? x * inv : (x - mean) * inv;
}

// dx of one element given the row's means of g and g * u (g = dy * gamma).
MR_HD float backward(float g, float xhat, float inv, float mean_g, float mean_gu, bool rms) {
  return inv * (g - (rms ? 0.0f : mean_g) - xhat * mean_gu);
}

// Keras' Normalization divisor: max(sqrt(var), epsilon = 1e-7).
MR_HD float feature_scale(float var) {
  const float s = sqrtf(var);
  return s > 1e-7f || s != s ? s : 1e-7f;  // a NaN variance stays NaN
}

// Whether an embedding index stored as a float names a row of 0..input_dim-1.
MR_HD bool valid_index(float v, int64_t input_dim) {
  return v >= 0.0f && v < static_cast<float>(input_dim) && floorf(v) == v;
}

}  // namespace lnorm
}  // namespace mr
