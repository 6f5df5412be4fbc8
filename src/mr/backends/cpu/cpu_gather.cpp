// CPU backend: gather_rows (i14-devinput), the row gather of datasets
// resident on the device. Rows are copied whole, in order, on the caller's
// thread: a batch's rows are few and memcpy runs at memory bandwidth.
#include <cstring>

#include "backends/cpu/cpu_backend.h"

namespace mr {

void CpuBackend::gather_rows(int64_t rows, int64_t width, const float* src, const int32_t* index,
                             float* dst) {
  const size_t bytes = static_cast<size_t>(width) * sizeof(float);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * width, src + static_cast<int64_t>(index[r]) * width, bytes);
}

}  // namespace mr
