// GEMM benchmark (not a test): GFLOP/s of CpuBackend::gemm at the shapes of
// every product one training step of the MNIST MLP (784-256-256-10, batch 64)
// issues (nn/layers/dense.cpp: forward X W (NN); backward dW = X^T dY (TN)
// and dX = dY W^T (NT), the first layer's dX skipped as the input needs no
// gradient; the 10-unit output layer from its kernel kept transposed, whose
// copy is timed too; all with beta 0 and packed leading dimensions) and two
// large ones, next to the FMA ceiling of this CPU (a loop of independent
// vector FMAs), on the backend's default kernel path (cpu_isa.h;
// MIRRORED_CPU_ISA picks another) and, where the build has oneDNN, its
// dnnl_sgemm on one thread beside it (the library the avx512 path uses).
//   bench_gemm [threads=2] [seconds per shape=0.3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "build_config.h"
#include "core/fp_mode.h"
#include "core/thread_team.h"

#if MR_WITH_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#endif

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// FMA throughput: 16 independent accumulators hide the FMA latency on both
// pipes. Returns GFLOP/s of one thread.
double fma_ceiling_one(double secs) {
  const long iters = 1 << 20;
  double best = 0.0;
  const auto t_end = Clock::now() + std::chrono::duration<double>(secs);
  float sink = 0.0f;
  while (Clock::now() < t_end) {
    const auto t0 = Clock::now();
#if defined(__AVX512F__)
    __m512 acc[16];
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (long it = 0; it < iters; ++it)
      for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    __m512 s = acc[0];
    for (int i = 1; i < 16; ++i) s = _mm512_add_ps(s, acc[i]);
    sink += _mm512_reduce_add_ps(s);
    const double flops = 2.0 * 16 * 16 * iters;
#elif defined(__AVX2__) && defined(__FMA__)
    // 12 accumulators and the 2 operands fit AVX2's 16 registers (16
    // accumulators spilled to the stack: 59 against 93 GFLOP/s on an AMD EPYC
    // Zen 3, below what its GEMMs reach); 12 chains cover 2 pipes x 4 cycles.
    constexpr int kAcc = 12;
    __m256 acc[kAcc];
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (long it = 0; it < iters; ++it)
#pragma GCC unroll 12
      for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    alignas(32) float out[8];
    __m256 s = acc[0];
    for (int i = 1; i < kAcc; ++i) s = _mm256_add_ps(s, acc[i]);
    _mm256_store_ps(out, s);
    for (float v : out) sink += v;
    const double flops = 2.0 * 8 * kAcc * iters;
#else
    volatile float x = 1.0f;
    for (long it = 0; it < iters; ++it) x = x * 0.999999f + 1e-7f;
    sink += x;
    const double flops = 2.0 * iters;
#endif
    const double g = flops / seconds_since(t0) / 1e9;
    if (g > best) best = g;
  }
  if (sink == 12345.0f) std::puts("");  // keeps the loop alive
  return best;
}

double fma_ceiling(int threads, double secs) {
  std::vector<double> g(static_cast<size_t>(threads));
  std::vector<std::thread> ts;
  for (int t = 1; t < threads; ++t)
    ts.emplace_back([&g, t, secs] { g[static_cast<size_t>(t)] = fma_ceiling_one(secs); });
  g[0] = fma_ceiling_one(secs);
  for (auto& t : ts) t.join();
  double sum = 0.0;
  for (double v : g) sum += v;
  return sum;
}

// A float array on a 64-byte boundary.
class AlignedVec {
 public:
  explicit AlignedVec(size_t n)
      : n_(n), p_(static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64))) {
    if (p_ == nullptr) std::abort();
  }
  ~AlignedVec() { std::free(p_); }
  AlignedVec(const AlignedVec&) = delete;
  AlignedVec& operator=(const AlignedVec&) = delete;
  size_t size() const { return n_; }
  float* data() { return p_; }
  float& operator[](size_t i) { return p_[i]; }

 private:
  size_t n_;
  float* p_;
};

struct Shape {
  const char* what;
  bool ta, tb;
  long m, n, k;
};

// GFLOP/s of `product(a, b, c)` on s's operands (best of several batches).
template <typename Product>
double bench_product(const Shape& s, double secs, Product&& product) {
  const long arows = s.ta ? s.k : s.m, acols = s.ta ? s.m : s.k;
  const long brows = s.tb ? s.n : s.k, bcols = s.tb ? s.k : s.n;
  // 64-byte aligned, as the step's buffers are (the executor places every
  // buffer at a multiple of 16 floats in a 64-byte aligned block): a
  // std::vector's 16-byte alignment splits most vector loads over two cache
  // lines and ran the narrow products up to 25% slower.
  AlignedVec a(static_cast<size_t>(arows * acols)), b(static_cast<size_t>(brows * bcols)),
      c(static_cast<size_t>(s.m * s.n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7919) % 1000) * 1e-3f - 0.5f;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<float>((i * 104729) % 1000) * 1e-3f - 0.5f;
  auto once = [&] { product(a.data(), acols, b.data(), bcols, c.data()); };
  for (int i = 0; i < 3; ++i) once();
  // Best of several timed batches: the figure the hardware can sustain.
  double best = 0.0;
  const auto t_end = Clock::now() + std::chrono::duration<double>(secs);
  const double flops = 2.0 * s.m * s.n * s.k;
  const long reps = flops > 1e9 ? 1 : static_cast<long>(2e8 / flops) + 1;
  while (Clock::now() < t_end) {
    const auto t0 = Clock::now();
    for (long r = 0; r < reps; ++r) once();
    const double g = flops * reps / seconds_since(t0) / 1e9;
    if (g > best) best = g;
  }
  return best;
}

double bench(mr::Backend& be, const Shape& s, double secs) {
  return bench_product(s, secs, [&](const float* a, long lda, const float* b, long ldb, float* c) {
    be.gemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a, lda, b, ldb, 0.0f, c, s.n);
  });
}

// oneDNN's sgemm on one thread (-1 without oneDNN).
double bench_dnnl(const Shape& s, double secs) {
#if MR_WITH_DNNL
  omp_set_num_threads(1);
  return bench_product(s, secs, [&](const float* a, long lda, const float* b, long ldb, float* c) {
    dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a, lda, b, ldb, 0.0f, c,
               s.n);
  });
#else
  (void)s;
  (void)secs;
  return -1.0;
#endif
}

// Microseconds of the copy W[k, units] -> W^T that Dense makes once per step
// where the backend keeps narrow weights transposed (best of several batches).
double transpose_us(mr::Backend& be, long k, long units, double secs) {
  AlignedVec w(static_cast<size_t>(k * units)), wt(static_cast<size_t>(k * units));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 97) * 1e-2f;
  const mr::StridedCopy c = mr::matrix_transpose(k, units, units, k);
  const long reps = 20000;
  double best = 1e30;
  const auto t_end = Clock::now() + std::chrono::duration<double>(secs);
  while (Clock::now() < t_end) {
    const auto t0 = Clock::now();
    for (long r = 0; r < reps; ++r) be.strided_copy(c, w.data(), wt.data());
    best = std::min(best, seconds_since(t0) / reps * 1e6);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const double secs = argc > 2 ? std::atof(argv[2]) : 0.3;
  mr::FlushToZeroGuard ftz;
  const Shape shapes[] = {
      {"fwd dense1  X W1", false, false, 64, 256, 784},
      {"fwd dense2  H W2", false, false, 64, 256, 256},
      // The output layer's W3 (256x10) is kept transposed for the step
      // (Backend::keeps_transposed_narrow_weights, true on the AVX-512 CPU):
      // forward is H (W3^T)^T, dX3 is dY (W3^T).
      {"fwd dense3  H W3", false, true, 64, 10, 256},
      {"bwd dW1  X^T dY", true, false, 784, 256, 64},
      {"bwd dW2  H^T dY", true, false, 256, 256, 64},
      {"bwd dW3  H^T dY", true, false, 256, 10, 64},
      {"bwd dX3  dY W3^T", false, false, 64, 256, 10},
      {"bwd dX2  dY W2^T", false, true, 64, 256, 256},
      {"large", false, false, 4096, 256, 784},
      {"large", false, false, 2048, 2048, 2048},
  };
  auto one = mr::make_cpu_backend(0, 1);
  auto team = mr::make_cpu_backend(0, threads);
  std::printf("kernel path: %s (%s)\n", mr::cpu_isa_name(mr::default_cpu_isa()),
              mr::cpu_gemm_description(mr::default_cpu_isa()).c_str());
  std::printf("%-18s %4s %5s %5s %5s %12s %12s %14s   %s\n", "product", "op", "m", "n", "k",
              "1 thr GF/s", "team GF/s", "oneDNN 1 thr", "team working");
  for (const Shape& s : shapes) {
    const double g1 = bench(*one, s, secs);
    const double gt = bench(*team, s, secs);
    const double gd = bench_dnnl(s, secs);
    const mr::TeamStatus st = team->host_threads();
    std::printf("%-18s %c%c   %5ld %5ld %5ld %12.1f %12.1f %14.1f   %d/%d, %ld stalls\n", s.what,
                s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, g1, gt, gd, st.active, st.size,
                static_cast<long>(st.stalls));
  }
  if (one->keeps_transposed_narrow_weights(10))
    std::printf("W3 transpose: 256x10 in %.3f us (1 thread), once per step\n",
                transpose_us(*one, 256, 10, secs));
  std::printf("FMA ceiling: 1 thread %.1f GFLOP/s, %d threads %.1f GFLOP/s\n", fma_ceiling(1, secs),
              threads, fma_ceiling(threads, secs));
  std::printf("(team = %d threads)\n", threads);
  return 0;
}
