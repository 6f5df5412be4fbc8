// The CUDA column reductions (backends/cuda/cuda_column_reduce.h: bias_grad,
// column_moments, batch-norm and layer-norm parameter gradients): row chunks
// on blockIdx.y and a fixed-order second pass. The split is tested on the
// CPU (a function of the shape only, every row in exactly one chunk, the
// partials within their scratch); the GPU tests (skipped without a device,
// failures under MIRRORED_TEST_CUDA=1) compare every reduction with the CPU
// backend, from one chunk to the MNIST convnet's first bias gradient (86,528
// rows x 32 channels) and to more columns than the partials hold, and check
// that the results are the same bits run to run and backend to backend.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cuda/cuda_column_split.h"
#include "core/backend.h"
#include "core/device_info.h"
#include "tests/test_util.h"

namespace mr {
namespace {

TEST(ColumnSplit, IsAFunctionOfTheShapeThatCoversEveryRowOnce) {
  for (int64_t rows : {int64_t{0}, int64_t{1}, int64_t{127}, int64_t{128}, int64_t{129},
                       int64_t{4096}, int64_t{86528}, int64_t{1} << 20, int64_t{3} << 24}) {
    for (int64_t cols : {int64_t{1}, int64_t{32}, int64_t{256}, int64_t{70000}}) {
      for (int k : {1, 2}) {
        SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols) + ", k " +
                     std::to_string(k));
        const cuda::ColumnSplit s = cuda::column_split(rows, cols, k);
        ASSERT_GE(s.chunks, 1);
        ASSERT_LE(s.chunks, cuda::kMaxColumnChunks);  // grid.y
        if (rows == 0) continue;
        EXPECT_GE(s.chunks * s.chunk_rows, rows) << "rows left out";
        EXPECT_LT((s.chunks - 1) * s.chunk_rows, rows) << "an empty chunk";
        if (s.chunks > 1) {
          EXPECT_LE(k * s.chunks * cols, kColumnPartials) << "partials overflow the scratch";
          EXPECT_GE(s.chunk_rows, cuda::kColumnChunkRows);
        }
        const cuda::ColumnSplit again = cuda::column_split(rows, cols, k);
        EXPECT_EQ(again.chunks, s.chunks);
        EXPECT_EQ(again.chunk_rows, s.chunk_rows);
      }
    }
  }
  // The convnet's first bias gradient runs on hundreds of blocks, not one.
  EXPECT_GE(cuda::column_split(86528, 32, 1).chunks, 500);
  EXPECT_GE(cuda::column_split(4096, 256, 1).chunks, 16);
}

// ---- GPU ----

using Vec = std::vector<float>;

struct Shape2 {
  int64_t rows, cols;
};

// Every column reduction of one backend on host inputs (x, dy: rows x cols),
// concatenated: bias_grad (and accumulated onto ones), column sums, centred
// squares, batch-norm sums, layer-norm dgamma and dbeta.
Vec reductions(Backend& be, const Shape2& s, const Vec& x, const Vec& dy) {
  const int64_t n = s.rows * s.cols, c = s.cols;
  std::vector<DeviceBuffer> keep;
  auto put = [&](const Vec& v) {
    keep.push_back(be.allocate(std::max<size_t>(1, v.size()) * sizeof(float)));
    be.upload(keep.back().get(), v.data(), v.size() * sizeof(float));
    return static_cast<float*>(keep.back().get());
  };
  float *gx = put(x), *gdy = put(dy);
  float* out = put(Vec(static_cast<size_t>(9 * c), 0.0f));
  float* acc = out + c;
  be.fill(c, acc, 1.0f);
  be.bias_grad(s.rows, c, gdy, out, false);
  be.bias_grad(s.rows, c, gdy, acc, true);
  const float inv_rows = 1.0f / static_cast<float>(std::max<int64_t>(1, s.rows));
  be.column_moments(s.rows, c, gx, nullptr, inv_rows, out + 2 * c);      // means
  be.column_moments(s.rows, c, gx, out + 2 * c, inv_rows, out + 3 * c);  // variances
  const Vec ones(static_cast<size_t>(c), 1.0f);
  float* var = put(ones);
  be.batch_norm_backward_reduce(s.rows, c, gdy, gx, out + 2 * c, var, 1e-3f, out + 4 * c,
                                out + 5 * c);
  float* stats = put(Vec(static_cast<size_t>(2 * std::max<int64_t>(1, s.rows)), 0.0f));
  float* y = put(Vec(static_cast<size_t>(n), 0.0f));
  be.layer_norm_forward(s.rows, c, gx, nullptr, nullptr, 1e-3f, false, stats, y);
  be.layer_norm_backward(s.rows, c, gdy, gx, nullptr, stats, false, nullptr, out + 6 * c,
                         out + 7 * c);
  be.layer_norm_backward(s.rows, c, gdy, gx, nullptr, stats, true, nullptr, out + 8 * c, nullptr);
  Vec h(static_cast<size_t>(9 * c));
  be.download(h.data(), out, h.size() * sizeof(float));
  return h;
}

const char* const kWhat[] = {
    "bias_grad",      "bias_grad (accumulate)", "column means",     "column variances", "bn sum_dy",
    "bn sum_dy_xhat", "layer_norm dgamma",      "layer_norm dbeta", "rms dgamma"};

TEST(GpuColumnReductions, MatchTheCpuAndRepeatBitForBit) {
  MR_REQUIRE_GPUS(1);
  auto cpu = make_cpu_backend(0, 2);
  auto gpu = make_cuda_backend(0, 0);
  auto gpu2 = make_cuda_backend(1, 0);  // another replica on the same device
  for (const Shape2& s : {Shape2{0, 5}, Shape2{1, 1}, Shape2{100, 33}, Shape2{1000, 70},
                          Shape2{4096, 256}, Shape2{86528, 32}, Shape2{300, 70000}}) {
    const std::string shape = std::to_string(s.rows) + " x " + std::to_string(s.cols);
    const auto n = static_cast<size_t>(s.rows * s.cols);
    const Vec x = uniform_floats(n, 61, 0, -2.0f, 3.0f), dy = uniform_floats(n, 62, 0, -1.0f, 1.0f);
    const Vec want = reductions(*cpu, s, x, dy);
    const Vec got = reductions(*gpu, s, x, dy);
    // A bound on the rounding of any summation order, per column: the terms'
    // magnitudes (|dy| times at most ~4 for xhat and u; |x| over the rows for
    // the means), plus the result's own rounding.
    Vec mag(static_cast<size_t>(s.cols), 0.0f);
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t c = 0; c < s.cols; ++c) {
        const size_t i = static_cast<size_t>(r * s.cols + c);
        mag[static_cast<size_t>(c)] +=
            4.0f * std::fabs(dy[i]) + std::fabs(x[i]) / static_cast<float>(s.rows);
      }
    for (size_t i = 0; i < want.size(); ++i) {
      const size_t c = i % static_cast<size_t>(s.cols);
      const float tol = 1e-5f * (mag[c] + std::fabs(want[i])) + 1e-6f;
      ASSERT_NEAR(got[i], want[i], tol)
          << kWhat[i / static_cast<size_t>(s.cols)] << " of column " << c << ", " << shape;
    }
    EXPECT_EQ(reductions(*gpu, s, x, dy), got) << "not the same bits run to run, " << shape;
    EXPECT_EQ(reductions(*gpu2, s, x, dy), got)
        << "not the same bits on another backend, " << shape;
  }
}

}  // namespace
}  // namespace mr
