// The per-row loss dispatcher shared by the CPU and CUDA loss kernels
// (MR_HD): one row's per-sample value, its sample weight and its gradient.
// The row formulas themselves are in kernel_math.h (the crossentropies and
// MSE).
#pragma once

#include <cstdint>

#include "backends/common/kernel_math.h"
#include "core/backend.h"
#include "core/hd.h"

namespace mr {
namespace kmath {

// The per-sample loss of row r times its weight w (w = sample_weight[r], or
// 1 when sample_weight is null), with gs * w * d(loss)/d(pred) written into
// dpred's row r when dpred is not null. The per-sample value is computed in
// double and rounded to float, as Keras' per-sample losses are float32, and
// the weight multiplies it in float (Keras: values * sample_weight). Sums of
// float values in double are exact while they span fewer than 2^29 ulps of
// the smallest, so a running mean (an epoch's loss) does not depend on the
// order of the samples: a shuffle, or the split over replicas, leaves it
// bit-identical.
MR_HD double loss_row(LossKind kind, const LossParams& p, int64_t r, int64_t cols,
                      const float* pred, const float* target, const float* sample_weight, float gs,
                      float* dpred, bool* bad) {
  const float* z = pred + r * cols;
  float* d = dpred ? dpred + r * cols : nullptr;
  const float w = sample_weight ? sample_weight[r] : 1.0f;
  const float g = gs * w;
  double v = 0.0;
  switch (kind) {
    case LossKind::sparse_categorical_crossentropy:
      v = sparse_ce_row(cols, z, target + r, g, d, p.from_logits, bad);
      break;
    case LossKind::categorical_crossentropy:
      v = categorical_ce_row(cols, z, target + r * cols, g, d, p.from_logits);
      break;
    case LossKind::binary_crossentropy:
      v = binary_ce_row(cols, z, target + r * cols, g, d, p.from_logits);
      break;
    case LossKind::mean_squared_error:
      v = mse_row(cols, z, target + r * cols, g, d);
      break;
  }
  return static_cast<double>(static_cast<float>(v) * w);
}

}  // namespace kmath
}  // namespace mr
