// The CPU gemm's team splits (cpu_gemm.cpp): transposed-A products with a
// tall C split by rows, wide products by columns, the rest by rows. For every
// split path, at sizes just around the split grains (8 rows, 16 columns) and
// at the vignette's backward shapes, teams of 1 to 4 threads must give results
// within a double-precision reference's rounding bound and bit-identical to
// one another (a split never changes an element's arithmetic).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/rng.h"
#include "tests/test_util.h"

namespace mr {
namespace {

using Vec = std::vector<float>;

Vec random_vec(size_t n, uint64_t seed) { return uniform_floats(n, seed); }

struct Case {
  bool ta, tb;
  int64_t m, n, k;
  float beta;
};

TEST(CpuGemmSplit, EveryPathMatchesReferenceAndIsTheSameForAnyTeamSize) {
  for (CpuIsa isa : cpu_isas_available()) {
    SCOPED_TRACE(std::string("kernel path ") + cpu_isa_name(isa));
    std::vector<std::unique_ptr<Backend>> teams;
    for (int t = 1; t <= 4; ++t) teams.push_back(make_cpu_backend(0, t, isa));
    const Case cases[] = {
        // Transposed A, tall C: row split (dW = X^T dY of the vignette's layers).
        {true, false, 784, 256, 64, 0.0f},
        {true, false, 256, 256, 64, 1.0f},
        {true, false, 257, 255, 63, 0.0f},  // odd sizes around the grains
        {true, false, 137, 129, 65, 0.5f},
        {true, true, 263, 81, 47, 0.0f},
        {true, false, 1000, 17, 33, 0.0f},  // narrow-ish C, many rows
        // Wide C: column split (the forward X W and the backward dY W^T).
        {false, false, 64, 256, 784, 0.0f},
        {false, true, 64, 256, 256, 0.0f},
        {false, false, 63, 271, 129, 1.0f},
        {true, false, 65, 257, 131, 0.0f},  // transposed A but wide: columns
        // Narrow C: row split.
        {false, false, 333, 31, 95, 0.0f},
        {false, true, 601, 10, 100, 0.5f},
    };
    uint64_t seed = 1;
    for (const Case& g : cases) {
      const int64_t arows = g.ta ? g.k : g.m, acols = g.ta ? g.m : g.k;
      const int64_t brows = g.tb ? g.n : g.k, bcols = g.tb ? g.k : g.n;
      const int64_t ldc = g.n + 3;  // padding columns must stay untouched
      const Vec a = random_vec(static_cast<size_t>(arows * acols), seed++);
      const Vec b = random_vec(static_cast<size_t>(brows * bcols), seed++);
      Vec c0 = random_vec(static_cast<size_t>(g.m * ldc), seed++);
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j)
          if (g.beta == 0.0f) c0[static_cast<size_t>(i * ldc + j)] = std::nanf("");  // never read
      std::vector<Vec> out;
      for (auto& be : teams) {
        Vec c = c0;
        be->gemm(g.ta, g.tb, g.m, g.n, g.k, 1.0f, a.data(), acols, b.data(), bcols, g.beta,
                 c.data(), ldc);
        out.push_back(std::move(c));
      }
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          const size_t o = static_cast<size_t>(i * ldc + j);
          if (j >= g.n) {
            ASSERT_EQ(out[0][o], c0[o]) << "padding column written";
            continue;
          }
          double s = 0.0, mag = 0.0;
          for (int64_t p = 0; p < g.k; ++p) {
            const double av = g.ta ? a[static_cast<size_t>(p * acols + i)]
                                   : a[static_cast<size_t>(i * acols + p)];
            const double bv = g.tb ? b[static_cast<size_t>(j * bcols + p)]
                                   : b[static_cast<size_t>(p * bcols + j)];
            s += av * bv;
            mag += std::fabs(av * bv);
          }
          if (g.beta != 0.0f) {
            s += g.beta * c0[o];
            mag += std::fabs(g.beta * c0[o]);
          }
          ASSERT_NEAR(out[0][o], s, 1e-6 + 2e-7 * static_cast<double>(g.k) * mag)
              << g.m << "x" << g.n << "x" << g.k << " ta=" << g.ta << " tb=" << g.tb << " at " << i
              << "," << j;
        }
      for (size_t t = 1; t < out.size(); ++t)
        for (size_t o = 0; o < out[0].size(); ++o)
          ASSERT_EQ(std::memcmp(&out[0][o], &out[t][o], sizeof(float)), 0)
              << g.m << "x" << g.n << "x" << g.k << " ta=" << g.ta << " tb=" << g.tb << ": "
              << (t + 1) << " threads differ from 1 at element " << o;
    }
  }
}

}  // namespace
}  // namespace mr
