// The shape and merge ops on the CPU: strided_copy (permutes, windows,
// repeats and their adjoint sums) and the element-wise max / min of merge
// layers with their first-hit gradient. Index arithmetic: common/strided_math.h.
#include "backends/common/nan_math.h"
#include "backends/common/strided_math.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_gemm_narrow.h"
#include "core/error.h"

namespace mr {

void CpuBackend::strided_copy(const StridedCopy& c, const float* src, float* dst) {
  MR_CHECK(
      c.rank >= 0 && c.rank <= kMaxStridedRank && c.sum_rank >= 0 && c.sum_rank <= kMaxStridedRank,
      internal, "strided_copy: rank ", c.rank, " / sum rank ", c.sum_rank, " out of range");
  const int64_t n = kmath::box_size(c.rank, c.dims);
  if (n <= 0) return;
  // matrix_transpose() of a matrix of <= 16 columns (a narrow Dense kernel
  // kept transposed, keeps_transposed_narrow_weights): the register transpose
  // of the narrow GEMM kernels, several times faster than the loop below's
  // element a cycle.
  if (c.rank == 2 && c.sum_rank == 0 && c.dims[0] <= 16 && c.src_stride[0] == 1 &&
      c.dst_stride[1] == 1) {
    cpu::narrow_transpose(src, c.src_stride[1], c.dims[1], c.dims[0], dst, c.dst_stride[0]);
    return;
  }
  const int64_t per = kmath::box_size(c.sum_rank, c.sum_dims);
  cpu::for_range(team_, n, cpu::kElementwiseGrain / (4 * (per > 0 ? per : 1)) + 1,
                 [&](int64_t b, int64_t e) {
                   for (int64_t i = b; i < e; ++i) {
                     int64_t so = 0, d = 0;
                     kmath::strided_offsets(c, i, &so, &d);
                     dst[d] = c.sum_rank == 0 ? src[so] : kmath::strided_sum(c, src + so);
                   }
                 });
}

void CpuBackend::extremum(int64_t n, bool is_max, const float* a, const float* b, float* out) {
  cpu::for_range(team_, n, cpu::kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) out[i] = kmath::extremum_of(is_max, a[i], b[i]);
  });
}

void CpuBackend::extremum_grad(int64_t n, const float* x, const float* y, const float* dy,
                               float* taken, float* dx) {
  cpu::for_range(team_, n, cpu::kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const bool eq = nanmath::same_or_nan(x[i], y[i]);
      if (dx != nullptr) dx[i] = taken[i] == 0.0f && eq ? dy[i] : 0.0f;
      taken[i] = taken[i] != 0.0f || eq ? 1.0f : 0.0f;
    }
  });
}

void CpuBackend::l2_normalize_rows(int64_t rows, int64_t cols, const float* x, float* y) {
  cpu::for_rows(team_, rows, cols * 2, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) kmath::l2_normalize_row(cols, x + r * cols, y + r * cols);
  });
}

void CpuBackend::l2_normalize_rows_backward(int64_t rows, int64_t cols, const float* x,
                                            const float* dy, float* dx) {
  cpu::for_rows(team_, rows, cols * 4, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      kmath::l2_normalize_row_backward(cols, x + r * cols, dy + r * cols, dx + r * cols);
  });
}

}  // namespace mr
