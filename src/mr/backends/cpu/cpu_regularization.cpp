// CPU ops of weight and activity regularization and of weight constraints
// (backends/common/regularization_math.h). Serial and in index order: the
// regularized tensors are weights and one layer's outputs, and a fixed order
// keeps the double sums independent of the team size.
#include <cmath>

#include "backends/common/regularization_math.h"
#include "backends/cpu/cpu_backend.h"

namespace mr {

void CpuBackend::l1_l2_penalty(int64_t n, const float* x, float l1, float l2, double scale,
                               double* acc, float grad_scale, float* grad) {
  if (n <= 0) return;
  if (acc != nullptr) {
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += regmath::l1_l2_term(x[i], l1, l2);
    *acc += scale * s;
  }
  if (grad != nullptr)
    for (int64_t i = 0; i < n; ++i) grad[i] += grad_scale * regmath::l1_l2_grad(x[i], l1, l2);
}

void CpuBackend::norm_constraint(int64_t outer, int64_t reduce, int64_t inner, float min_value,
                                 float max_value, float rate, float* w) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      float* g = w + o * reduce * inner + i;
      double s = 0.0;
      for (int64_t r = 0; r < reduce; ++r) s += static_cast<double>(g[r * inner]) * g[r * inner];
      const float f =
          regmath::norm_scale(static_cast<float>(std::sqrt(s)), min_value, max_value, rate);
      for (int64_t r = 0; r < reduce; ++r) g[r * inner] *= f;
    }
}

void CpuBackend::non_neg_constraint(int64_t n, float* w) {
  for (int64_t i = 0; i < n; ++i) w[i] = regmath::non_neg(w[i]);
}

void CpuBackend::offdiag_abs_penalty(int64_t rows, const float* p, float factor, double scale,
                                     double* acc, float* dp) {
  if (rows <= 1) {
    // No pairs: Keras divides 0 by 0 (NaN); a one-row kernel is rejected
    // before it gets here (nn/regularization.cpp).
    if (dp != nullptr && rows == 1) dp[0] = 0.0f;
    return;
  }
  const double pairs = static_cast<double>(rows) * (static_cast<double>(rows) - 1.0) / 2.0;
  const float coef = static_cast<float>(0.5 * factor / pairs);
  double s = 0.0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < rows; ++j) {
      const float v = p[i * rows + j];
      if (i != j) s += std::fabs(static_cast<double>(v));
      if (dp != nullptr) dp[i * rows + j] = i == j ? 0.0f : coef * regmath::sign(v);
    }
  if (acc != nullptr) *acc += scale * 0.5 * factor * s / pairs;
}

}  // namespace mr
