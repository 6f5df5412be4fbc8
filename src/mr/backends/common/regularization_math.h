// Per-element formulas of the regularization and constraint ops (Keras 3's
// regularizers.py and constraints.py), shared by the CPU and CUDA backends so
// that both compute the same arithmetic for an element; they differ only in
// how the double sums are ordered (each in a fixed order of its own).
#pragma once

#include <math.h>

#include "core/hd.h"

namespace mr {
namespace regmath {

// Keras' backend.epsilon(), which MaxNorm, UnitNorm and MinMaxNorm add to the norm.
constexpr float kNormEps = 1e-7f;

// sign(x) as ops.sign: -1, 0 or 1, NaN for NaN (the gradient of |x| in TF).
MR_HD float sign(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x); }

// l1 * |x| + l2 * x^2, in double (one term of the L1L2 penalty).
MR_HD double l1_l2_term(float x, float l1, float l2) {
  const double v = x;
  return static_cast<double>(l1) * fabs(v) + static_cast<double>(l2) * v * v;
}

// d(l1 |x| + l2 x^2)/dx.
MR_HD float l1_l2_grad(float x, float l1, float l2) { return l1 * sign(x) + 2.0f * l2 * x; }

// The factor a norm constraint multiplies a group by, from the group's norm:
// desired / (eps + norm) with desired = rate * clip(norm, lo, hi) + (1 - rate) * norm.
MR_HD float norm_scale(float norm, float lo, float hi, float rate) {
  const float clipped = norm < lo ? lo : (norm > hi ? hi : norm);
  const float desired = rate * clipped + (1.0f - rate) * norm;
  return desired / (kNormEps + norm);
}

// NonNeg: w * (w >= 0), which keeps NaN (NaN * 0).
MR_HD float non_neg(float w) { return w * (w >= 0.0f ? 1.0f : 0.0f); }

}  // namespace regmath
}  // namespace mr
