// Backend::traced_reduce on the CPU (contract: core/backend.h, "i15-users";
// formulas: common/traced_reduce_math.h). The sums run on the calling thread
// in increasing row order, so they do not depend on the team size: the work
// is one pass over the loss's output, small next to the model's.
#include "backends/common/traced_reduce_math.h"
#include "backends/cpu/cpu_backend.h"
#include "core/error.h"

namespace mr {

void CpuBackend::traced_reduce(bool batched, int64_t rows, int64_t width, const float* out,
                               const float* sample_weight, float grad_scale, float* d_out,
                               double* sum, double* count) {
  MR_CHECK(width >= 1, shape, "traced_reduce needs width >= 1, got ", width);
  if (rows < 0) rows = 0;
  if (batched) {
    double s = 0.0, c = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      const double w = trmath::weight(sample_weight, r);
      s += w * trmath::mean(out + r * width, width);
      c += w;
      if (d_out != nullptr) {
        const float g = trmath::grad(grad_scale, w, width);
        for (int64_t j = 0; j < width; ++j) d_out[r * width + j] = g;
      }
    }
    *sum += s;
    if (count != nullptr) *count += c;
    return;
  }
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) total += trmath::weight(sample_weight, r);
  *sum += trmath::mean(out, width) * total;
  if (count != nullptr) *count += total;
  if (d_out != nullptr) {
    const float g = trmath::grad(grad_scale, total, width);
    for (int64_t j = 0; j < width; ++j) d_out[j] = g;
  }
}

}  // namespace mr
