// The narrow-dimension GEMM kernels (cpu_gemm_narrow.cpp): n <= 16 (NN, NT
// dot products; TN broadcast FMAs) and k <= 16 (NN, NT broadcast FMAs), and
// the shapes next to them that fall back to the general GEMM (TT, n = 17).
// Every transpose pair, beta 0 / 1 / 0.5, alpha != 1, odd sizes, leading
// dimensions wider than the operands, k beyond one chunk of the transposed
// copy: within a double-precision loop's rounding bound, the padding of C
// untouched, and bit-identical for teams of 1, 2 and 3 threads and for the
// team-less gemm_serial.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_gemm_narrow.h"
#include "core/rng.h"
#include "tests/test_util.h"

namespace mr {
namespace {

using Vec = std::vector<float>;

Vec random_vec(size_t n, uint64_t seed) { return uniform_floats(n, seed); }

struct Case {
  bool ta, tb;
  int64_t m, n, k;
};

// Runs every team and gemm_serial on one case and checks them (the caller
// stops at the first fatal failure).
void check_case(CpuIsa isa, const Case& g, float alpha, float beta, int64_t pad, uint64_t seed,
                std::vector<std::unique_ptr<Backend>>& teams) {
  const int64_t arows = g.ta ? g.k : g.m, acols = g.ta ? g.m : g.k;
  const int64_t brows = g.tb ? g.n : g.k, bcols = g.tb ? g.k : g.n;
  const int64_t lda = acols + pad, ldb = bcols + 2 * pad, ldc = g.n + pad + 1;
  const Vec a = random_vec(static_cast<size_t>(arows * lda), seed);
  const Vec b = random_vec(static_cast<size_t>(brows * ldb), seed + 1);
  Vec c0 = random_vec(static_cast<size_t>(g.m * ldc), seed + 2);
  if (beta == 0.0f)  // beta == 0 must never read C
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) c0[static_cast<size_t>(i * ldc + j)] = std::nanf("");
  std::vector<Vec> out;
  for (auto& be : teams) {
    Vec c = c0;
    be->gemm(g.ta, g.tb, g.m, g.n, g.k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
    out.push_back(std::move(c));
  }
  {
    Vec c = c0;
    cpu::gemm_serial(isa, g.ta, g.tb, g.m, g.n, g.k, alpha, a.data(), lda, b.data(), ldb, beta,
                     c.data(), ldc);
    out.push_back(std::move(c));
  }
  const std::string what = std::string(cpu_isa_name(isa)) + " " + std::to_string(g.m) + "x" +
                           std::to_string(g.n) + "x" + std::to_string(g.k) +
                           " ta=" + std::to_string(g.ta) + " tb=" + std::to_string(g.tb) +
                           " alpha=" + std::to_string(alpha) + " beta=" + std::to_string(beta) +
                           " pad=" + std::to_string(pad);
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      const size_t o = static_cast<size_t>(i * ldc + j);
      if (j >= g.n) {
        ASSERT_EQ(std::memcmp(&out[0][o], &c0[o], sizeof(float)), 0) << what << ": padding written";
        continue;
      }
      double s = 0.0, mag = 0.0;
      for (int64_t p = 0; p < g.k; ++p) {
        const double av =
            g.ta ? a[static_cast<size_t>(p * lda + i)] : a[static_cast<size_t>(i * lda + p)];
        const double bv =
            g.tb ? b[static_cast<size_t>(j * ldb + p)] : b[static_cast<size_t>(p * ldb + j)];
        s += av * bv;
        mag += std::fabs(av * bv);
      }
      s *= alpha;
      mag *= std::fabs(alpha);
      if (beta != 0.0f) {
        s += beta * static_cast<double>(c0[o]);
        mag += std::fabs(beta * static_cast<double>(c0[o]));
      }
      ASSERT_NEAR(out[0][o], s, 1e-6 + 2e-7 * static_cast<double>(g.k + 2) * mag)
          << what << " at " << i << "," << j;
    }
  for (size_t t = 1; t < out.size(); ++t)
    for (size_t o = 0; o < out[0].size(); ++o)
      ASSERT_EQ(std::memcmp(&out[0][o], &out[t][o], sizeof(float)), 0)
          << what << ": run " << t << " (teams of 1..3, then gemm_serial) differs at element " << o;
}

std::vector<std::unique_ptr<Backend>> make_teams(CpuIsa isa) {
  std::vector<std::unique_ptr<Backend>> teams;
  for (int t = 1; t <= 3; ++t) teams.push_back(make_cpu_backend(0, t, isa));
  return teams;
}

// Every test below runs on every kernel path this machine can execute
// (cpu_isa.h): the narrow kernels are the avx512 path's, the others run these
// shapes on the blocked GEMM.
TEST(CpuGemmNarrow, SmallDimensionsEveryTransposeBetaAndStride) {
  for (CpuIsa isa : cpu_isas_available()) {
    auto teams = make_teams(isa);
    uint64_t seed = 100;
    const int64_t ms[] = {1, 5, 63, 67};
    const int64_t small[] = {1, 3, 10, 15, 17};
    const int64_t wide[] = {33, 100};
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      for (int64_t m : ms)
        for (int64_t s : small)
          for (int64_t w : wide) {
            // narrow n (wide k), and narrow k (wide n)
            for (const Case g : {Case{ta, tb, m, s, w}, Case{ta, tb, m, w, s}})
              for (float beta : {0.0f, 1.0f, 0.5f}) {
                check_case(isa, g, beta == 0.5f ? -0.75f : 1.0f, beta, (seed % 3 == 0) ? 0 : 5,
                           seed, teams);
                if (HasFatalFailure()) return;
                seed += 3;
              }
          }
    }
  }
}

TEST(CpuGemmNarrow, StepShapesLongKAndSplitsAcrossTheTeam) {
  for (CpuIsa isa : cpu_isas_available()) {
    auto teams = make_teams(isa);
    const Case cases[] = {
        // The vignette's output layer at batch 64: H W3, dW3 = H^T dY, dX3 = dY W3^T.
        {false, false, 64, 10, 256},
        {true, false, 256, 10, 64},
        {false, true, 64, 256, 10},
        // Large enough to split over the team, with ragged ends.
        {false, false, 1001, 10, 257},
        {false, true, 999, 13, 300},
        {true, false, 1003, 10, 129},
        {true, false, 517, 16, 70},
        {false, false, 301, 1003, 10},
        {false, true, 257, 999, 16},
        // The column-pair kernel (NN and NT, n <= 10): every pair count (odd
        // n: the last pair half zero), leftover rows of the 4-row tile, k below
        // one 8-deep block, with a tail, and beyond one chunk; and the dot
        // kernel above it (n = 12 .. 16).
        {false, false, 67, 16, 259},
        {false, false, 13, 2, 5},
        {false, false, 29, 4, 8},
        {false, false, 31, 6, 23},
        {false, false, 10, 8, 64},
        {false, false, 50, 12, 1030},
        {false, false, 23, 14, 17},
        {false, false, 11, 9, 1024},
        {false, true, 45, 10, 77},
        {false, true, 9, 5, 600},
        // k beyond one 512-float chunk of the transposed copy of B.
        {false, false, 37, 7, 1100},
        {false, true, 37, 7, 1100},
        // Fallbacks next to the kernels' shapes (TT narrow, n = 17, TN narrow k).
        {true, true, 70, 10, 90},
        {false, false, 70, 17, 90},
        {true, false, 70, 90, 10},
    };
    uint64_t seed = 9000;
    for (const Case& g : cases)
      for (float beta : {0.0f, 1.0f}) {
        check_case(isa, g, 1.0f, beta, beta == 0.0f ? 0 : 3, seed, teams);
        if (HasFatalFailure()) return;
        seed += 3;
      }
  }
}

TEST(CpuGemmNarrow, HandlesOnlyTheNarrowShapes) {
  if (!cpu::narrow_gemm_handles(false, false, 64, 10, 256))
    GTEST_SKIP() << "this build has no AVX-512 kernels: every shape runs on the general GEMM";
  EXPECT_TRUE(cpu::narrow_gemm_handles(true, false, 256, 10, 64));
  EXPECT_TRUE(cpu::narrow_gemm_handles(false, true, 64, 256, 10));
  EXPECT_TRUE(cpu::narrow_gemm_handles(false, true, 64, 16, 256));
  EXPECT_FALSE(cpu::narrow_gemm_handles(true, true, 64, 10, 256));
  EXPECT_FALSE(cpu::narrow_gemm_handles(false, false, 64, 17, 256));
  EXPECT_FALSE(cpu::narrow_gemm_handles(true, false, 64, 256, 10));
  EXPECT_FALSE(cpu::narrow_gemm_handles(false, false, 64, 256, 784));
  EXPECT_FALSE(cpu::narrow_gemm_handles(false, false, 64, 10, 0));
}

// strided_copy's 2-D transpose of a block with <= 16 columns (the register
// transpose) against an index loop: rows around the 16-row step and beyond
// one 512-row chunk, padded strides, the destination's padding untouched; 17
// columns take the element loop and give the same.
TEST(CpuGemmNarrow, StridedCopyTransposesNarrowBlocks) {
  CpuBackend be(0, 2);
  uint64_t seed = 900;
  for (int64_t rows : {1, 7, 16, 17, 33, 256, 784})
    for (int64_t cols : {1, 2, 10, 15, 16, 17})
      for (int64_t pad : {0, 3}) {
        const int64_t lds = cols + pad, ldd = rows + 2 * pad;
        const Vec src = random_vec(static_cast<size_t>(rows * lds), seed++);
        Vec dst(static_cast<size_t>(cols * ldd), -7.0f);
        be.strided_copy(matrix_transpose(rows, cols, lds, ldd), src.data(), dst.data());
        for (int64_t j = 0; j < cols; ++j)
          for (int64_t q = 0; q < ldd; ++q) {
            const float want = q < rows ? src[static_cast<size_t>(q * lds + j)] : -7.0f;
            ASSERT_EQ(dst[static_cast<size_t>(j * ldd + q)], want)
                << rows << "x" << cols << " pad " << pad << " at [" << j << ", " << q << "]";
          }
      }
}

// Dense keeps W^T where the backend says so (keeps_transposed_narrow_weights):
// forward x W becomes the NT product with W^T, backward dz W^T the NN one.
// The narrow kernels make the same copy of W^T themselves, so both forms give
// bit-identical results, on one thread and on two.
TEST(CpuGemmNarrow, TransposedNarrowWeightsGiveTheSameProducts) {
  uint64_t seed = 1200;
  for (CpuIsa isa : cpu_isas_available())
    for (int threads : {1, 2}) {
      CpuBackend be(0, threads, isa);
      for (int64_t units : {1, 2, 10, 11, 16})
        for (int64_t k : {3, 10, 256, 784})
          for (int64_t m : {1, 5, 64}) {
            EXPECT_EQ(be.keeps_transposed_narrow_weights(units),
                      isa == CpuIsa::avx512 && cpu::narrow_gemm_handles(false, true, m, units, k));
            const Vec x = random_vec(static_cast<size_t>(m * k), seed++);
            const Vec w = random_vec(static_cast<size_t>(k * units), seed++);
            const Vec dz = random_vec(static_cast<size_t>(m * units), seed++);
            Vec wt(static_cast<size_t>(units * k));
            for (int64_t p = 0; p < k; ++p)
              for (int64_t j = 0; j < units; ++j)
                wt[static_cast<size_t>(j * k + p)] = w[static_cast<size_t>(p * units + j)];
            Vec z0(static_cast<size_t>(m * units)), z1 = z0;
            be.gemm(false, false, m, units, k, 1.0f, x.data(), k, w.data(), units, 0.0f, z0.data(),
                    units);
            be.gemm(false, true, m, units, k, 1.0f, x.data(), k, wt.data(), k, 0.0f, z1.data(),
                    units);
            Vec dx0(static_cast<size_t>(m * k)), dx1 = dx0;
            be.gemm(false, true, m, k, units, 1.0f, dz.data(), units, w.data(), units, 0.0f,
                    dx0.data(), k);
            be.gemm(false, false, m, k, units, 1.0f, dz.data(), units, wt.data(), k, 0.0f,
                    dx1.data(), k);
            const std::string what = std::to_string(m) + "x" + std::to_string(units) + "x" +
                                     std::to_string(k) + ", " + std::to_string(threads) +
                                     " threads, " + cpu_isa_name(isa);
            ASSERT_EQ(0, std::memcmp(z0.data(), z1.data(), z0.size() * sizeof(float))) << what;
            ASSERT_EQ(0, std::memcmp(dx0.data(), dx1.data(), dx0.size() * sizeof(float))) << what;
          }
    }
}

}  // namespace
}  // namespace mr
