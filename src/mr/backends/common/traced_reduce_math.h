// The per-row formulas of Backend::traced_reduce (core/backend.h,
// "i15-users"), written once for the CPU and CUDA kernels so that both
// compute the same arithmetic.
#pragma once

#include <cstdint>

#include "core/hd.h"

namespace mr {
namespace trmath {

// w_r: the sample weight of row r, 1 without weights.
MR_HD double weight(const float* w, int64_t r) {
  return w == nullptr ? 1.0 : static_cast<double>(w[r]);
}

// The mean of x[0..n), summed in double in increasing index.
MR_HD double mean(const float* x, int64_t n) {
  double s = 0.0;
  for (int64_t j = 0; j < n; ++j) s += static_cast<double>(x[j]);
  return s / static_cast<double>(n);
}

// The output gradient of a value weighing `w` whose mean over `width`
// entries enters the loss: grad_scale * w / width, rounded once to float.
MR_HD float grad(float grad_scale, double w, int64_t width) {
  return static_cast<float>(static_cast<double>(grad_scale) * w / static_cast<double>(width));
}

}  // namespace trmath
}  // namespace mr
