// CPU embedding ops. The lookup checks every index before it reads a row
// (an index outside the table throws, it is never read). The gradient's
// columns are split over the team and each member scans the indices in
// order, adding into its own columns only: every sum is taken in index
// order, whatever the team size, with no shared writes.
#include <cstring>

#include "backends/common/layer_norm_math.h"
#include "backends/cpu/cpu_backend.h"
#include "core/error.h"

namespace mr {

void CpuBackend::embedding_forward(int64_t n, int64_t input_dim, int64_t output_dim,
                                   const float* idx, const float* table, float* y) {
  for (int64_t i = 0; i < n; ++i)
    MR_CHECK(lnorm::valid_index(idx[i], input_dim), value, "embedding index ", idx[i],
             " at position ", i, " is not an integer in 0..", input_dim - 1);
  cpu::for_rows(team_, n, output_dim, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      std::memcpy(y + i * output_dim, table + static_cast<int64_t>(idx[i]) * output_dim,
                  static_cast<size_t>(output_dim) * sizeof(float));
  });
}

void CpuBackend::embedding_backward(int64_t n, int64_t input_dim, int64_t output_dim,
                                    const float* idx, const float* dy, float* dtable) {
  fill(input_dim * output_dim, dtable, 0.0f);
  if (n <= 0) return;
  const int64_t grain = n * output_dim < cpu::kRowwiseMinWork ? output_dim : 16;
  cpu::for_range(team_, output_dim, grain, [&](int64_t c0, int64_t c1) {
    for (int64_t i = 0; i < n; ++i) {
      float* dst = dtable + static_cast<int64_t>(idx[i]) * output_dim;
      const float* src = dy + i * output_dim;
      for (int64_t c = c0; c < c1; ++c) dst[c] += src[c];
    }
  });
}

}  // namespace mr
