// CPU backend: memory, element-wise BLAS-1 ops, bias ops and the factory. The
// other op families live in cpu_gemm.cpp, cpu_activation.cpp, cpu_loss.cpp and
// cpu_optimizer.cpp.
#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace mr {

namespace {
int checked_threads(int threads) {
  MR_CHECK(threads >= 1 && threads <= cpu::kMaxTeamSize, value, "a CPU device needs 1..",
           cpu::kMaxTeamSize, " threads, got ", threads);
  return threads;
}
}  // namespace

CpuBackend::CpuBackend(int index, int threads, CpuIsa isa)
    : index_(index), isa_(isa), team_(checked_threads(threads)) {
  MR_CHECK(index >= 0, value, "a CPU device index must be >= 0, got ", index);
  if (isa_ == CpuIsa::avx512) cpu::warm_up_gemm();  // i14-gemm: no JIT pause in the first step
}

DeviceBuffer CpuBackend::allocate(size_t bytes) {
  // aligned_alloc wants a multiple of the alignment; 0 bytes still gets a
  // distinct non-null block so that every buffer has an owner to free it.
  // The block's first 64 bytes (the alignment) hold its size, so that
  // release() knows what it gives back (memory_use(), i14-monitor).
  const size_t rounded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  void* base = std::aligned_alloc(64, rounded + kSizeHeader);
  ++allocations_;
  if (base == nullptr) fail(ErrorKind::device, "out of host memory allocating ", bytes, " bytes");
  const auto held = static_cast<int64_t>(rounded);
  std::memcpy(base, &held, sizeof(held));
  void* p = static_cast<char*>(base) + kSizeHeader;
  std::memset(p, 0, rounded);
  const int64_t now = bytes_in_use_.fetch_add(held) + held;
  int64_t peak = bytes_peak_.load();
  while (now > peak && !bytes_peak_.compare_exchange_weak(peak, now)) {
  }
  return DeviceBuffer(p, DeviceFree{this});
}

void CpuBackend::release(void* p) noexcept {
  if (p == nullptr) return;
  void* base = static_cast<char*>(p) - kSizeHeader;
  int64_t held = 0;
  std::memcpy(&held, base, sizeof(held));
  bytes_in_use_.fetch_sub(held);
  std::free(base);
}

MemoryUse CpuBackend::memory_use() const {
  MemoryUse m;
  m.in_use = bytes_in_use_.load();
  m.peak = std::max(bytes_peak_.load(), m.in_use);
  return m;  // device_used: -1, host memory has no device-wide figure
}

void CpuBackend::reset_peak_memory() { bytes_peak_.store(bytes_in_use_.load()); }

void CpuBackend::upload(void* dst, const void* host_src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, host_src, bytes);
}

void CpuBackend::download(void* host_dst, const void* src, size_t bytes) {
  ++downloads_;
  if (bytes > 0) std::memcpy(host_dst, src, bytes);
}

void CpuBackend::copy(void* dst, const void* src, size_t bytes) {
  if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
}

void CpuBackend::fill(int64_t n, float* x, float value) {
  cpu::for_range(team_, n, cpu::kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) x[i] = value;
  });
}

void CpuBackend::axpy(int64_t n, float alpha, const float* x, float* y) {
  cpu::for_range(team_, n, cpu::kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] += alpha * x[i];
  });
}

void CpuBackend::multiply(int64_t n, const float* a, const float* b, float* out) {
  cpu::for_range(team_, n, cpu::kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) out[i] = a[i] * b[i];
  });
}

void CpuBackend::bias_add(int64_t rows, int64_t cols, const float* bias, float* y) {
  cpu::for_rows(team_, rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* yr = y + r * cols;
      for (int64_t c = 0; c < cols; ++c) yr[c] += bias[c];
    }
  });
}

void CpuBackend::bias_grad(int64_t rows, int64_t cols, const float* dy, float* db,
                           bool accumulate) {
  // Split columns, each member sums its columns over all rows in row order:
  // the arithmetic is the same for any team size. Rows are the outer loop so
  // that the inner loop streams a contiguous row segment.
  const int64_t work = rows * cols;
  const int64_t grain = work < cpu::kRowwiseMinWork ? (cols > 0 ? cols : 1) : 16;
  cpu::for_range(team_, cols, grain, [&](int64_t c0, int64_t c1) {
    if (!accumulate)
      for (int64_t c = c0; c < c1; ++c) db[c] = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      const float* dr = dy + r * cols;
      for (int64_t c = c0; c < c1; ++c) db[c] += dr[c];
    }
  });
}

std::unique_ptr<Backend> make_cpu_backend(int index, int threads, CpuIsa isa) {
  require_cpu_isa();
  bool runs = false;
  for (CpuIsa a : cpu_isas_available()) runs = runs || a == isa;
  MR_CHECK(runs, device, "the ", cpu_isa_label(isa),
           " CPU kernels are not in this build or the CPU ", "lacks them");
  return std::make_unique<CpuBackend>(index, threads, isa);
}

}  // namespace mr
