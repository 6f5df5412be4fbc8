// CPU backend ops against plain double-precision references. Team sizes 1 and
// 2 exercise both the inline and the split paths; where the split cannot
// change the arithmetic the results must be bit-identical.
#include <gtest/gtest.h>

#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"

namespace mr {
namespace {

using Vec = std::vector<float>;

Vec random_vec(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  Vec v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

bool bit_equal(const Vec& a, const Vec& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Backends {
  std::unique_ptr<Backend> one = make_cpu_backend(0, 1);
  std::unique_ptr<Backend> two = make_cpu_backend(1, 2);
};

// ---- memory -------------------------------------------------------------------

TEST(CpuBackend, MemoryIsZeroedAlignedAndCopies) {
  auto be = make_cpu_backend(3, 2);
  EXPECT_EQ(be->name(), "cpu:3");
  EXPECT_EQ(be->kind(), DeviceKind::cpu);
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, size_t{1 << 20}}) {
    DeviceBuffer buf = be->allocate(bytes);
    ASSERT_NE(buf.get(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buf.get()) % 64, 0u);
    const auto* p = static_cast<const unsigned char*>(buf.get());
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(p[i], 0u);
  }
  Vec host = random_vec(1000, 1), back(1000);
  DeviceBuffer a = be->allocate(4000), b = be->allocate(4000);
  be->upload(a.get(), host.data(), 4000);
  be->copy(b.get(), a.get(), 4000);
  be->synchronize();
  be->download(back.data(), b.get(), 4000);
  EXPECT_TRUE(bit_equal(host, back));
  EXPECT_THROW(make_cpu_backend(0, 0), Error);
}

// ---- element-wise --------------------------------------------------------------

TEST(CpuBackend, FillAxpyMultiply) {
  Backends bs;
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{100003}}) {
    const Vec x = random_vec(static_cast<size_t>(n), 2), y0 = random_vec(static_cast<size_t>(n), 3);
    Vec results[2][3];
    int t = 0;
    for (Backend* be : {bs.one.get(), bs.two.get()}) {
      Vec f(static_cast<size_t>(n));
      be->fill(n, f.data(), 2.5f);
      for (float v : f) ASSERT_EQ(v, 2.5f);
      Vec y = y0;
      be->axpy(n, -0.75f, x.data(), y.data());
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(y[static_cast<size_t>(i)],
                    y0[static_cast<size_t>(i)] - 0.75 * x[static_cast<size_t>(i)], 1e-6);
      Vec m(static_cast<size_t>(n));
      be->multiply(n, x.data(), y0.data(), m.data());
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(m[static_cast<size_t>(i)],
                  x[static_cast<size_t>(i)] * y0[static_cast<size_t>(i)]);
      results[t][0] = f;
      results[t][1] = y;
      results[t][2] = m;
      ++t;
    }
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(bit_equal(results[0][k], results[1][k]));
  }
}

// ---- gemm ------------------------------------------------------------------------

struct GemmCase {
  int64_t m, n, k, pad;  // pad: extra columns in every leading dimension
  float alpha, beta;
};

// op(A)[m,k] * op(B)[k,n] with row-major storage and leading dimensions.
void gemm_ref(bool ta, bool tb, const GemmCase& g, const Vec& a, int64_t lda, const Vec& b,
              int64_t ldb, const Vec& c0, int64_t ldc, std::vector<double>& out,
              std::vector<double>& mag) {
  out.assign(static_cast<size_t>(g.m * g.n), 0.0);
  mag.assign(static_cast<size_t>(g.m * g.n), 0.0);
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double s = 0.0, sa = 0.0;
      for (int64_t p = 0; p < g.k; ++p) {
        const double av =
            ta ? a[static_cast<size_t>(p * lda + i)] : a[static_cast<size_t>(i * lda + p)];
        const double bv =
            tb ? b[static_cast<size_t>(j * ldb + p)] : b[static_cast<size_t>(p * ldb + j)];
        s += av * bv;
        sa += std::fabs(av * bv);
      }
      const double cv = c0[static_cast<size_t>(i * ldc + j)];
      out[static_cast<size_t>(i * g.n + j)] = g.alpha * s + (g.beta == 0.0f ? 0.0 : g.beta * cv);
      mag[static_cast<size_t>(i * g.n + j)] =
          std::fabs(g.alpha) * sa + (g.beta == 0.0f ? 0.0 : std::fabs(g.beta * cv));
    }
}

Vec run_gemm(Backend& be, bool ta, bool tb, const GemmCase& g, const Vec& a, int64_t lda,
             const Vec& b, int64_t ldb, Vec c, int64_t ldc) {
  be.gemm(ta, tb, g.m, g.n, g.k, g.alpha, a.data(), lda, b.data(), ldb, g.beta, c.data(), ldc);
  return c;
}

// Every kernel path this machine runs (cpu_isa.h), each against the
// reference and bit-identical between 1 and 2 threads.
TEST(CpuBackend, GemmAllTransposesAgainstReference) {
  for (CpuIsa isa : cpu_isas_available()) {
    SCOPED_TRACE(std::string("kernel path ") + cpu_isa_name(isa));
    struct {
      std::unique_ptr<Backend> one, two;
    } bs{make_cpu_backend(0, 1, isa), make_cpu_backend(0, 2, isa)};
    const GemmCase cases[] = {
        {1, 1, 1, 0, 1.0f, 0.0f},      {37, 53, 19, 0, 1.0f, 0.0f},
        {37, 53, 19, 5, 0.5f, 2.0f},   {64, 256, 784, 0, 1.0f, 0.0f},  // column split
        {64, 256, 256, 3, 1.0f, 1.0f},  // column split, accumulate, ld > cols
        {300, 40, 50, 1, -1.0f, 0.5f},  // row split
        {100, 10, 300, 2, 1.0f, 0.0f},  // narrow output, inline
        {600, 10, 100, 1, 1.0f, 0.5f},  // narrow output, split at a multiple of 256 rows
        {256, 10, 64, 0, 1.0f, 1.0f},   // narrow output (dW of a 10-unit layer)
        {5, 7, 0, 0, 1.0f, 0.5f},       // k = 0: C = beta C
    };
    for (const GemmCase& g : cases) {
      for (int tr = 0; tr < 4; ++tr) {
        const bool ta = tr & 1, tb = tr & 2;
        const int64_t arows = ta ? g.k : g.m, acols = ta ? g.m : g.k;
        const int64_t brows = tb ? g.n : g.k, bcols = tb ? g.k : g.n;
        const int64_t lda = std::max<int64_t>(acols, 1) + g.pad,
                      ldb = std::max<int64_t>(bcols, 1) + g.pad;
        const int64_t ldc = g.n + g.pad;
        const Vec a = random_vec(static_cast<size_t>(std::max<int64_t>(arows * lda, 1)), 10 + tr);
        const Vec b = random_vec(static_cast<size_t>(std::max<int64_t>(brows * ldb, 1)), 20 + tr);
        Vec c0 = random_vec(static_cast<size_t>(g.m * ldc), 30 + tr);
        // beta == 0 must not read C: poison it.
        if (g.beta == 0.0f) std::fill(c0.begin(), c0.end(), std::nanf(""));
        std::vector<double> ref, mag;
        gemm_ref(ta, tb, g, a, lda, b, ldb, c0, ldc, ref, mag);
        const Vec c1 = run_gemm(*bs.one, ta, tb, g, a, lda, b, ldb, c0, ldc);
        const Vec c2 = run_gemm(*bs.two, ta, tb, g, a, lda, b, ldb, c0, ldc);
        for (int64_t i = 0; i < g.m; ++i)
          for (int64_t j = 0; j < g.n; ++j) {
            const size_t o = static_cast<size_t>(i * g.n + j),
                         ci = static_cast<size_t>(i * ldc + j);
            const double tol = 1e-6 * (1.0 + mag[o]) + 2e-7 * g.k * mag[o];
            ASSERT_NEAR(c1[ci], ref[o], tol) << g.m << "x" << g.n << "x" << g.k << " ta=" << ta
                                             << " tb=" << tb << " at " << i << "," << j;
            ASSERT_NEAR(c2[ci], ref[o], tol) << "2 threads";
          }
        // Padding columns of C are never written.
        for (int64_t i = 0; i < g.m; ++i)
          for (int64_t j = g.n; j < ldc; ++j) {
            const size_t ci = static_cast<size_t>(i * ldc + j);
            EXPECT_TRUE(bit_equal(Vec{c1[ci]}, Vec{c0[ci]}));
          }
        // Splitting C by columns (n >= 64) or by rows leaves every element's
        // arithmetic unchanged: bit-identical to the single-threaded product.
        EXPECT_TRUE(bit_equal(c1, c2)) << g.m << "x" << g.n << "x" << g.k << " tr=" << tr;
      }
    }
  }
}

// A row of C does not depend on how many rows the product has, nor on where
// the row falls in it: the first rows of a product of m rows are bit-identical
// to a product of those rows alone (a dataset's batches of 5 against an
// array's batch of 8 gave predictions that differed in the last bit with
// oneDNN's AVX2 sgemm). Every kernel path, every transpose pair, 1 and 2
// threads, k across several of the blocked kernel's k blocks.
TEST(CpuBackend, GemmRowsDoNotDependOnTheRowCount) {
  for (CpuIsa isa : cpu_isas_available())
    for (int threads : {1, 2}) {
      auto be = make_cpu_backend(0, threads, isa);
      for (int tr = 0; tr < 4; ++tr) {
        const bool ta = tr & 1, tb = tr & 2;
        for (const auto& [m, n, k] :
             {std::array<int64_t, 3>{64, 256, 784}, std::array<int64_t, 3>{64, 10, 256},
              std::array<int64_t, 3>{40, 37, 600}, std::array<int64_t, 3>{300, 64, 64}}) {
          const int64_t lda = ta ? m : k, ldb = tb ? k : n;
          const Vec a = random_vec(static_cast<size_t>(m * k), 70 + tr);
          const Vec b = random_vec(static_cast<size_t>(k * n), 80 + tr);
          Vec whole(static_cast<size_t>(m * n));
          be->gemm(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, whole.data(), n);
          for (int64_t rows : {int64_t{1}, int64_t{5}, int64_t{7}, m - 3}) {
            for (int64_t start : {int64_t{0}, int64_t{2}}) {
              if (start + rows > m) continue;
              // Rows [start, start + rows) as a product of their own; with A
              // transposed its columns are those rows.
              Vec part(static_cast<size_t>(rows * n));
              const float* as = ta ? a.data() + start : a.data() + start * lda;
              be->gemm(ta, tb, rows, n, k, 1.0f, as, lda, b.data(), ldb, 0.0f, part.data(), n);
              for (int64_t i = 0; i < rows * n; ++i)
                ASSERT_EQ(std::memcmp(&part[static_cast<size_t>(i)],
                                      &whole[static_cast<size_t>(start * n + i)], sizeof(float)),
                          0)
                    << cpu_isa_name(isa) << ", " << threads << " threads, " << m << "x" << n << "x"
                    << k << " ta=" << ta << " tb=" << tb << ": rows " << start << ".."
                    << start + rows << " alone differ at element " << i;
            }
          }
        }
      }
    }
}

// The avx512 path's library GEMM (oneDNN, which picks its own kernels, so
// this runs on any x86-64) computes a one-row product as a taller one (two
// equal rows, or 16 where the CPU's kernels for few rows differ): the row
// is the first row of a two-row product, bit for bit, for every transpose
// pair and beta, and matches a double reference. (On AVX-512
// machines GemmRowsDoNotDependOnTheRowCount checks it against taller products.)
TEST(CpuBackend, LibraryGemmRunsOneRowAsTwoEqualRows) {
  const int64_t n = 40, k = 300;  // wider than the narrow kernels' 16
  for (int tr = 0; tr < 4; ++tr)
    for (float beta : {0.0f, 0.5f}) {
      const bool ta = tr & 1, tb = tr & 2;
      const int64_t lda = ta ? 3 : k, ldb = tb ? k : n;  // A: k x 3 when transposed
      const Vec a = random_vec(static_cast<size_t>(ta ? k * 3 : k), 90 + tr);
      const Vec b = random_vec(static_cast<size_t>(k * n), 95 + tr);
      Vec row = random_vec(static_cast<size_t>(n), 99);
      const Vec c0 = row;
      cpu::gemm_serial(CpuIsa::avx512, ta, tb, 1, n, k, 1.0f, a.data(), lda, b.data(), ldb, beta,
                       row.data(), n);
      Vec two(static_cast<size_t>(2 * k)), c2(static_cast<size_t>(2 * n));
      for (int64_t p = 0; p < k; ++p)
        two[static_cast<size_t>(p)] = two[static_cast<size_t>(k + p)] =
            a[static_cast<size_t>(ta ? p * lda : p)];
      for (int64_t j = 0; j < n; ++j)
        c2[static_cast<size_t>(j)] = c2[static_cast<size_t>(n + j)] = c0[static_cast<size_t>(j)];
      cpu::gemm_serial(CpuIsa::avx512, false, tb, 2, n, k, 1.0f, two.data(), k, b.data(), ldb, beta,
                       c2.data(), n);
      for (int64_t j = 0; j < n; ++j) {
        ASSERT_EQ(std::memcmp(&row[static_cast<size_t>(j)], &c2[static_cast<size_t>(j)], 4), 0)
            << "ta=" << ta << " tb=" << tb << " beta=" << beta << ": column " << j;
        double ref = beta * c0[static_cast<size_t>(j)];
        for (int64_t p = 0; p < k; ++p)
          ref += static_cast<double>(two[static_cast<size_t>(p)]) *
                 b[static_cast<size_t>(tb ? j * ldb + p : p * ldb + j)];
        ASSERT_NEAR(row[static_cast<size_t>(j)], ref, 1e-4) << "column " << j;
      }
    }
}

TEST(CpuBackend, GemmRejectsBadShapes) {
  auto be = make_cpu_backend(0, 1);
  Vec a(4), b(4), c(4);
  EXPECT_THROW(be->gemm(false, false, 2, 2, 2, 1.0f, a.data(), 1, b.data(), 2, 0.0f, c.data(), 2),
               Error);
  EXPECT_THROW(be->gemm(false, false, -1, 2, 2, 1.0f, a.data(), 2, b.data(), 2, 0.0f, c.data(), 2),
               Error);
}

// ---- bias ------------------------------------------------------------------------

TEST(CpuBackend, BiasAddAndGrad) {
  Backends bs;
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 5}, {512, 300}}) {
    const Vec bias = random_vec(static_cast<size_t>(cols), 4);
    const Vec y0 = random_vec(static_cast<size_t>(rows * cols), 5);
    Vec out[2], grad[2];
    int t = 0;
    for (Backend* be : {bs.one.get(), bs.two.get()}) {
      Vec y = y0;
      be->bias_add(rows, cols, bias.data(), y.data());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          ASSERT_EQ(y[static_cast<size_t>(r * cols + c)],
                    y0[static_cast<size_t>(r * cols + c)] + bias[static_cast<size_t>(c)]);
      Vec db(static_cast<size_t>(cols), 123.0f);
      be->bias_grad(rows, cols, y0.data(), db.data(), false);
      Vec db2 = db;
      be->bias_grad(rows, cols, y0.data(), db2.data(), true);
      for (int64_t c = 0; c < cols; ++c) {
        double s = 0.0;
        for (int64_t r = 0; r < rows; ++r) s += y0[static_cast<size_t>(r * cols + c)];
        ASSERT_NEAR(db[static_cast<size_t>(c)], s, 1e-5 * rows);
        ASSERT_NEAR(db2[static_cast<size_t>(c)], 2 * s, 2e-5 * rows);
      }
      out[t] = y;
      grad[t] = db2;
      ++t;
    }
    EXPECT_TRUE(bit_equal(out[0], out[1]));
    EXPECT_TRUE(bit_equal(grad[0], grad[1]));
  }
}

// ---- activations -------------------------------------------------------------------

double act_ref(Activation act, double x) {
  switch (act) {
    case Activation::linear:
      return x;
    case Activation::relu:
      return x > 0 ? x : 0;
    case Activation::sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case Activation::tanh:
      return std::tanh(x);
    case Activation::gelu:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::softmax:
      break;
  }
  return NAN;
}

void softmax_ref(const double* x, int64_t cols, double* y) {
  double mx = x[0];
  for (int64_t c = 1; c < cols; ++c) mx = std::max(mx, x[c]);
  double s = 0;
  for (int64_t c = 0; c < cols; ++c) s += std::exp(x[c] - mx);
  for (int64_t c = 0; c < cols; ++c) y[c] = std::exp(x[c] - mx) / s;
}

TEST(CpuBackend, ActivationsForwardAndBackwardAgainstFiniteDifferences) {
  Backends bs;
  const Activation acts[] = {Activation::linear, Activation::relu, Activation::sigmoid,
                             Activation::tanh,   Activation::gelu, Activation::softmax};
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4, 7}, {300, 200}}) {
    const size_t n = static_cast<size_t>(rows * cols);
    Vec x = random_vec(n, 7, -4.0f, 4.0f);
    for (auto& v : x)
      if (std::fabs(v) < 0.05f) v = 0.5f;  // keep FD away from the relu kink
    const Vec dy = random_vec(n, 8);
    for (Activation act : acts) {
      Vec ys[2], dxs[2];
      int t = 0;
      for (Backend* be : {bs.one.get(), bs.two.get()}) {
        Vec y(n), dx(n);
        be->activation_forward(act, rows, cols, x.data(), y.data());
        be->activation_backward(act, rows, cols, x.data(), y.data(), dy.data(), dx.data());
        ys[t] = y;
        dxs[t] = dx;
        ++t;
      }
      EXPECT_TRUE(bit_equal(ys[0], ys[1])) << static_cast<int>(act);
      EXPECT_TRUE(bit_equal(dxs[0], dxs[1])) << static_cast<int>(act);
      const Vec& y = ys[0];
      const Vec& dx = dxs[0];
      const double h = 1e-4;
      for (int64_t r = 0; r < std::min<int64_t>(rows, 20); ++r) {
        std::vector<double> xr(static_cast<size_t>(cols)), yr(static_cast<size_t>(cols));
        for (int64_t c = 0; c < cols; ++c)
          xr[static_cast<size_t>(c)] = x[static_cast<size_t>(r * cols + c)];
        if (act == Activation::softmax) {
          softmax_ref(xr.data(), cols, yr.data());
          double sum = 0;
          for (int64_t c = 0; c < cols; ++c) {
            ASSERT_NEAR(y[static_cast<size_t>(r * cols + c)], yr[static_cast<size_t>(c)], 1e-6);
            sum += y[static_cast<size_t>(r * cols + c)];
          }
          EXPECT_NEAR(sum, 1.0, 1e-5);
        } else {
          for (int64_t c = 0; c < cols; ++c)
            ASSERT_NEAR(y[static_cast<size_t>(r * cols + c)],
                        act_ref(act, xr[static_cast<size_t>(c)]),
                        2e-6 * (1 + std::fabs(xr[static_cast<size_t>(c)])));
        }
        // dL/dx for L = sum dy * f(x), by central differences of the reference.
        for (int64_t c = 0; c < cols; ++c) {
          double fd;
          if (act == Activation::softmax) {
            std::vector<double> xp = xr, xm = xr, yp(static_cast<size_t>(cols)),
                                ym(static_cast<size_t>(cols));
            xp[static_cast<size_t>(c)] += h;
            xm[static_cast<size_t>(c)] -= h;
            softmax_ref(xp.data(), cols, yp.data());
            softmax_ref(xm.data(), cols, ym.data());
            fd = 0;
            for (int64_t j = 0; j < cols; ++j)
              fd += dy[static_cast<size_t>(r * cols + j)] *
                    (yp[static_cast<size_t>(j)] - ym[static_cast<size_t>(j)]) / (2 * h);
          } else {
            const double xc = xr[static_cast<size_t>(c)];
            fd = dy[static_cast<size_t>(r * cols + c)] *
                 (act_ref(act, xc + h) - act_ref(act, xc - h)) / (2 * h);
          }
          ASSERT_NEAR(dx[static_cast<size_t>(r * cols + c)], fd, 1e-3 * std::fabs(fd) + 2e-6)
              << "act " << static_cast<int>(act) << " at " << r << "," << c;
        }
      }
    }
  }
}

TEST(CpuBackend, ActivationsInPlaceWhereAllowed) {
  auto be = make_cpu_backend(0, 2);
  const int64_t rows = 50, cols = 400;
  const Vec x = random_vec(static_cast<size_t>(rows * cols), 9, -3, 3),
            dy = random_vec(x.size(), 10);
  for (Activation act :
       {Activation::linear, Activation::relu, Activation::sigmoid, Activation::tanh}) {
    Vec y(x.size()), dx(x.size());
    be->activation_forward(act, rows, cols, x.data(), y.data());
    be->activation_backward(act, rows, cols, x.data(), y.data(), dy.data(), dx.data());
    Vec inplace = x;  // y aliases x; backward then reads y only
    be->activation_forward(act, rows, cols, inplace.data(), inplace.data());
    EXPECT_TRUE(bit_equal(inplace, y));
    Vec g = dy;  // dx aliases dy
    be->activation_backward(act, rows, cols, inplace.data(), inplace.data(), g.data(), g.data());
    EXPECT_TRUE(bit_equal(g, dx)) << static_cast<int>(act);
  }
}

TEST(CpuBackend, SoftmaxFlushesTinyOutputsToZero) {
  auto be = make_cpu_backend(0, 1);
  const Vec x = {0.0f, -100.0f, -87.0f, 1.0f};  // exp(-100) ~ 4e-44 is subnormal
  Vec y(4);
  be->activation_forward(Activation::softmax, 1, 4, x.data(), y.data());
  EXPECT_EQ(y[1], 0.0f);
  for (float v : y) EXPECT_TRUE(v == 0.0f || v >= FLT_MIN);
  EXPECT_NEAR(y[0] + y[3], 1.0, 1e-6);
}

// ---- dropout ---------------------------------------------------------------------

TEST(CpuBackend, DropoutMaskIsKeyedByGlobalPosition) {
  Backends bs;
  const int64_t rows = 256, cols = 300;
  const float rate = 0.3f;
  const Vec x = random_vec(static_cast<size_t>(rows * cols), 11);
  Vec mask1(x.size()), y1(x.size()), mask2(x.size()), y2(x.size());
  bs.one->dropout_forward(rows, cols, rate, 42, 7, 3, 0, x.data(), mask1.data(), y1.data());
  bs.two->dropout_forward(rows, cols, rate, 42, 7, 3, 0, x.data(), mask2.data(), y2.data());
  EXPECT_TRUE(bit_equal(mask1, mask2));
  EXPECT_TRUE(bit_equal(y1, y2));
  const float keep = 1.0f / (1.0f - rate);
  size_t kept = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_TRUE(mask1[i] == 0.0f || mask1[i] == keep);
    ASSERT_EQ(y1[i], x[i] * mask1[i]);
    kept += mask1[i] != 0.0f;
  }
  const double frac = static_cast<double>(kept) / static_cast<double>(x.size());
  EXPECT_NEAR(frac, 0.7, 0.01);  // 76800 draws: sd ~ 0.0017
  // Replica independence: rows 0..99 and 100..255 computed separately, with
  // their global row offsets, give the same masks.
  Vec ma(static_cast<size_t>(100 * cols)), ya(ma.size()), mb(static_cast<size_t>(156 * cols)),
      yb(mb.size());
  bs.two->dropout_forward(100, cols, rate, 42, 7, 3, 0, x.data(), ma.data(), ya.data());
  bs.one->dropout_forward(156, cols, rate, 42, 7, 3, 100, x.data() + 100 * cols, mb.data(),
                          yb.data());
  EXPECT_EQ(std::memcmp(ma.data(), mask1.data(), ma.size() * 4), 0);
  EXPECT_EQ(std::memcmp(mb.data(), mask1.data() + 100 * cols, mb.size() * 4), 0);
  // Another seed, step or stream changes the mask.
  for (int variant = 0; variant < 3; ++variant) {
    Vec m(x.size()), y(x.size());
    bs.two->dropout_forward(rows, cols, rate, variant == 0 ? 43 : 42, variant == 1 ? 8 : 7,
                            variant == 2 ? 4 : 3, 0, x.data(), m.data(), y.data());
    size_t differ = 0;
    for (size_t i = 0; i < x.size(); ++i) differ += m[i] != mask1[i];
    EXPECT_GT(differ, x.size() / 5) << "variant " << variant;
  }
  // rate 0 keeps everything; rate 1 is rejected.
  Vec m0(x.size()), y0(x.size());
  bs.one->dropout_forward(rows, cols, 0.0f, 1, 1, 1, 0, x.data(), m0.data(), y0.data());
  EXPECT_TRUE(bit_equal(y0, x));
  EXPECT_THROW(
      bs.one->dropout_forward(rows, cols, 1.0f, 1, 1, 1, 0, x.data(), m0.data(), y0.data()), Error);
}

}  // namespace
}  // namespace mr
