// Mixed-precision GEMM benchmark (not a test; issue 14, i14-mpcore): the
// Dense layer's three products (forward NN, dW TN, dx NT) in f32
// (CpuBackend::gemm) and in bf16 (cast_lowp of the operands the product reads
// + gemm_lowp, as the mixed Dense layer runs them) at the MNIST MLP's shapes
// (784-256-256-10) for a batch of 64 (the vignette's) and of 4096.
//   bench_lowp_gemm [threads=2] [seconds per shape=0.3]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backends/cpu/cpu_backend.h"

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double us_per_call(double secs, F&& f) {
  f();
  long n = 0;
  const auto t0 = Clock::now();
  double el = 0.0;
  do {
    f();
    ++n;
    el = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (el < secs);
  return el / static_cast<double>(n) * 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mr;
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const double secs = argc > 2 ? std::atof(argv[2]) : 0.3;
  auto be = make_cpu_backend(0, threads);
  const bool native = be->native_lowp(DType::bf16);
  be->prepare_lowp(DType::bf16);
  std::printf("threads %d, bf16 units: %s\n", threads, native ? "yes (oneDNN)" : "no (reference)");
  std::printf("%-26s %10s %10s %8s\n", "product (m x n x k)", "f32 us", "bf16 us", "speedup");
  struct Layer {
    int64_t in, out;
  };
  for (int64_t rows : {64, 4096})
    for (const Layer& l : {Layer{784, 256}, Layer{256, 256}, Layer{256, 10}}) {
      std::vector<float> x(static_cast<size_t>(rows * l.in), 0.5f),
          w(static_cast<size_t>(l.in * l.out), 0.25f), y(static_cast<size_t>(rows * l.out)),
          dw(w.size()), dx(x.size()), dy(y.size(), 0.125f);
      std::vector<uint16_t> x16(x.size()), w16(w.size()), dy16(dy.size());
      struct Case {
        const char* name;
        bool ta, tb;
        int64_t m, n, k;
      };
      const Case cases[] = {{"fwd NN", false, false, rows, l.out, l.in},
                            {"dW  TN", true, false, l.in, l.out, rows},
                            {"dx  NT", false, true, rows, l.in, l.out}};
      for (const Case& c : cases) {
        const float *a32 = nullptr, *b32 = nullptr;
        float* c32 = nullptr;
        const uint16_t *a16 = nullptr, *b16 = nullptr;
        int64_t lda = 0, ldb = 0;
        if (!c.ta && !c.tb) {
          a32 = x.data(), b32 = w.data(), c32 = y.data(), a16 = x16.data(), b16 = w16.data();
          lda = l.in, ldb = l.out;
        } else if (c.ta) {
          a32 = x.data(), b32 = dy.data(), c32 = dw.data(), a16 = x16.data(), b16 = dy16.data();
          lda = l.in, ldb = l.out;
        } else {
          a32 = dy.data(), b32 = w.data(), c32 = dx.data(), a16 = dy16.data(), b16 = w16.data();
          lda = l.out, ldb = l.out;
        }
        const double t32 = us_per_call(secs, [&] {
          be->gemm(c.ta, c.tb, c.m, c.n, c.k, 1.0f, a32, lda, b32, ldb, 0.0f, c32, c.n);
        });
        // The casts the layer does for this product: forward casts x and W,
        // dW casts dz (x's copy is kept), dx reuses both copies.
        const double t16 = us_per_call(secs, [&] {
          if (!c.ta && !c.tb) {
            be->cast_lowp(DType::bf16, static_cast<int64_t>(x.size()), x.data(), x16.data());
            be->cast_lowp(DType::bf16, static_cast<int64_t>(w.size()), w.data(), w16.data());
          } else if (c.ta) {
            be->cast_lowp(DType::bf16, static_cast<int64_t>(dy.size()), dy.data(), dy16.data());
          }
          be->gemm_lowp(DType::bf16, c.ta, c.tb, c.m, c.n, c.k, 1.0f, a16, lda, b16, ldb, 0.0f, c32,
                        c.n);
        });
        char label[64];
        std::snprintf(label, sizeof label, "%s %lldx%lldx%lld", c.name, static_cast<long long>(c.m),
                      static_cast<long long>(c.n), static_cast<long long>(c.k));
        std::printf("%-26s %10.1f %10.1f %7.2fx\n", label, t32, t16, t32 / t16);
      }
    }
  return 0;
}
