// Losses on the CPU: the per-row formulas of
// backends/common/kernel_math.h (Keras 3 semantics, described there), rows
// split over the team, row values summed in double in a fixed order.
#include "backends/common/kernel_math.h"
#include "backends/common/loss_math.h"
#include "backends/cpu/cpu_backend.h"
#include "core/error.h"

namespace mr {

void CpuBackend::loss(LossKind kind, const LossParams& p, int64_t rows, int64_t cols,
                      const float* pred, const float* target, const float* sample_weight,
                      float grad_scale, float* dpred, double* loss_acc) {
  MR_CHECK(cols >= 1, shape, "a loss needs at least one column, got ", cols);
  if (rows <= 0) return;
  const double total = cpu::reduce_rows(team_, rows, cols * 8, [&](int64_t r0, int64_t r1) {
    double s = 0.0;
    for (int64_t r = r0; r < r1; ++r) {
      bool bad = false;
      s += kmath::loss_row(kind, p, r, cols, pred, target, sample_weight, grad_scale, dpred, &bad);
      if (bad)
        fail(ErrorKind::value, "label ", target[r], " at row ", r, " is outside 0..", cols - 1);
    }
    return s;
  });
  if (loss_acc != nullptr) *loss_acc += total;
}

}  // namespace mr
