// The metric op on the CPU: backends/common/metric_math.h's row terms. Each
// state element sums its rows in row order on one thread; elements are spread
// over the team (a mean metric has two, so its rows are split instead and the
// chunk sums added in member order). Either way the result does not depend on
// the team's size for integer counts, and is deterministic for a given size.
#include <algorithm>

#include "backends/common/metric_math.h"
#include "backends/cpu/cpu_backend.h"
#include "core/error.h"

namespace mr {

void CpuBackend::metric(const MetricSpec& m, int64_t rows, int64_t cols, const float* pred,
                        const float* target, const float* sample_weight, double* state) {
  MR_CHECK(cols >= 1, shape, "a metric needs at least one column, got ", cols);
  if (rows <= 0) return;
  const int64_t n = metric_state_size(m, cols);
  auto sum_rows = [&](int64_t j, int64_t r0, int64_t r1) {
    double s = 0.0;
    for (int64_t r = r0; r < r1; ++r) {
      s += mmath::row_weight(m, sample_weight, r) * mmath::term(m, j, r, cols, pred, target);
    }
    return s;
  };
  if (n <= 2) {
    for (int64_t j = 0; j < n; ++j)
      state[j] += cpu::reduce_rows(team_, rows, cols,
                                   [&](int64_t r0, int64_t r1) { return sum_rows(j, r0, r1); });
    return;
  }
  // Work per element: rows x cols; a grain keeps small states on one thread.
  const int64_t per = rows * cols;
  const int64_t grain =
      per * n < cpu::kRowwiseMinWork ? n : std::max<int64_t>(1, cpu::kRowwiseMinWork / per);
  cpu::for_range(team_, n, grain, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) state[j] += sum_rows(j, 0, rows);
  });
}

}  // namespace mr
