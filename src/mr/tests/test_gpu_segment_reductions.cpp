// The CUDA reductions that ran on one block or one thread per row and now
// split their work: weight penalties (two-pass, block per segment), traced
// losses' reduction (likewise), reductions over a long axis into few outputs
// (a block per output), L2 normalisation of long rows (a block per row), and
// the embedding gradient (a stable sort of the indices: work in the indices,
// not the vocabulary; the old owner grid failed to launch above ~33.5M rows).
// Each is compared with the CPU backend at sizes that split, and repeated for
// the same bits. Skipped without a CUDA device (a failure under
// MIRRORED_TEST_CUDA=1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "core/op_kinds.h"
#include "tests/test_util.h"

namespace mr {
namespace {

using Vec = std::vector<float>;

class GpuSegmentReductions : public ::testing::Test {
 protected:
  void SetUp() override {
    MR_REQUIRE_GPUS(1);
    cpu_ = make_cpu_backend(0, 2);
    dev_ = make_cuda_backend(0, 0);
  }
  void TearDown() override { bufs_.clear(); }
  template <class T>
  T* put(const std::vector<T>& v) {
    bufs_.push_back(dev_->allocate(std::max<size_t>(1, v.size()) * sizeof(T)));
    dev_->upload(bufs_.back().get(), v.data(), v.size() * sizeof(T));
    return static_cast<T*>(bufs_.back().get());
  }
  template <class T>
  std::vector<T> get(const T* d, size_t n) {
    std::vector<T> v(n);
    dev_->download(v.data(), d, n * sizeof(T));
    return v;
  }
  std::unique_ptr<Backend> cpu_, dev_;
  std::vector<DeviceBuffer> bufs_;
};

// Double sums of the same terms in two orders: equal to ~1e-12 relative.
void expect_sum(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 1e-10 * std::max(1.0, std::fabs(want))) << what;
}

TEST_F(GpuSegmentReductions, WeightPenaltiesOfLargeWeights) {
  for (int64_t n : {int64_t{1000}, int64_t{8192}, int64_t{8193}, int64_t{25} << 20}) {
    const std::string what = "n = " + std::to_string(n);
    const Vec x = uniform_floats(static_cast<size_t>(n), 71),
              g0 = uniform_floats(static_cast<size_t>(n), 72);
    Vec g = g0;
    double want = 0.5;
    cpu_->l1_l2_penalty(n, x.data(), 0.01f, 0.02f, 2.0, &want, 0.25f, g.data());
    float* dx = put(x);
    float* dg = put(g0);
    double* dacc = put(std::vector<double>{0.5});
    dev_->l1_l2_penalty(n, dx, 0.01f, 0.02f, 2.0, dacc, 0.25f, dg);
    const double got = get(dacc, 1)[0];
    expect_sum(got, want, "l1_l2 penalty, " + what);
    const Vec gg = get(dg, static_cast<size_t>(n));
    for (size_t i = 0; i < gg.size(); i += 997)
      ASSERT_NEAR(gg[i], g[i], 1e-6f) << "l1_l2 gradient [" << i << "], " << what;
    // The same bits again.
    dev_->upload(dacc, std::vector<double>{0.5}.data(), sizeof(double));
    dev_->l1_l2_penalty(n, dx, 0.01f, 0.02f, 2.0, dacc, 0.0f, nullptr);
    EXPECT_EQ(get(dacc, 1)[0], got) << "l1_l2 penalty not repeatable, " << what;
  }
  const int64_t rows = 3000;  // 9M elements
  const Vec p = uniform_floats(static_cast<size_t>(rows * rows), 73);
  Vec dp(p.size());
  double want = 0.0;
  cpu_->offdiag_abs_penalty(rows, p.data(), 0.3f, 1.5, &want, dp.data());
  float* gp = put(p);
  float* gdp = put(Vec(p.size(), 9.0f));
  double* acc = put(std::vector<double>{0.0});
  dev_->offdiag_abs_penalty(rows, gp, 0.3f, 1.5, acc, gdp);
  expect_sum(get(acc, 1)[0], want, "off-diagonal penalty");
  EXPECT_EQ(get(gdp, p.size()), dp) << "off-diagonal penalty gradient";
}

TEST_F(GpuSegmentReductions, TracedReduceOfManyRows) {
  const int64_t rows = int64_t{1} << 20, width = 3;
  const Vec out = uniform_floats(static_cast<size_t>(rows * width), 74);
  const Vec w = uniform_floats(static_cast<size_t>(rows), 75, 0, 0.0f, 2.0f);
  for (bool batched : {true, false}) {
    const std::string what = batched ? "batched" : "not batched";
    const int64_t d_n = batched ? rows * width : width;
    Vec d(static_cast<size_t>(d_n));
    double sum = 1.0, count = 2.0;
    cpu_->traced_reduce(batched, rows, width, out.data(), w.data(), 0.5f, d.data(), &sum, &count);
    float *gout = put(out), *gw = put(w), *gd = put(Vec(static_cast<size_t>(d_n), 0.0f));
    double* gs = put(std::vector<double>{1.0, 2.0});
    dev_->traced_reduce(batched, rows, width, gout, gw, 0.5f, gd, gs, gs + 1);
    const std::vector<double> got = get(gs, 2);
    expect_sum(got[0], sum, "traced sum, " + what);
    expect_sum(got[1], count, "traced count, " + what);
    const Vec gd_h = get(gd, static_cast<size_t>(d_n));
    for (size_t i = 0; i < gd_h.size(); i += 101)
      ASSERT_NEAR(gd_h[i], d[i], 1e-6f * std::fabs(d[i]) + 1e-12f) << what << " gradient " << i;
  }
}

TEST_F(GpuSegmentReductions, ReductionsOverALongAxis) {
  struct View {
    int64_t outer, extent, inner;
  };
  for (const View& v : {View{1, int64_t{1} << 20, 1}, View{2, 300000, 3}, View{7, 1024, 5}}) {
    const std::string what = std::to_string(v.outer) + " x " + std::to_string(v.extent) + " x " +
                             std::to_string(v.inner);
    const auto n_in = static_cast<size_t>(v.outer * v.extent * v.inner);
    const auto n_out = static_cast<size_t>(v.outer * v.inner);
    Vec x = uniform_floats(n_in, 76, 0, -4.0f, 4.0f);
    x[n_in / 2] = 4.0f;  // ties of the maximum in the first output
    x[n_in / 3] = 4.0f;
    const Vec dy = uniform_floats(n_out, 77);
    float *gx = put(x), *gdy = put(dy);
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
      Vec y(n_out), dx(n_in);
      cpu_->reduce(op, v.outer, v.extent, v.inner, x.data(), y.data());
      cpu_->reduce_backward(op, v.outer, v.extent, v.inner, x.data(), y.data(), dy.data(),
                            dx.data());
      float* gy = put(Vec(n_out, 0.0f));
      float* gdx = put(Vec(n_in, 0.0f));
      dev_->reduce(op, v.outer, v.extent, v.inner, gx, gy);
      dev_->reduce_backward(op, v.outer, v.extent, v.inner, gx, gy, gdy, gdx);
      const Vec got = get(gy, n_out);
      for (size_t j = 0; j < n_out; ++j) {
        if (op == ReduceOp::sum)
          ASSERT_NEAR(got[j], y[j], 1e-6f * std::fabs(y[j]) + 1e-3f) << "sum " << j << ", " << what;
        else
          ASSERT_EQ(got[j], y[j]) << op_name(op) << " " << j << ", " << what;
      }
      EXPECT_EQ(get(gdx, n_in), dx) << op_name(op) << " backward, " << what;
      float* again = put(Vec(n_out, 0.0f));
      dev_->reduce(op, v.outer, v.extent, v.inner, gx, again);
      EXPECT_EQ(get(again, n_out), got) << op_name(op) << " not repeatable, " << what;
    }
  }
}

TEST_F(GpuSegmentReductions, L2NormalizeOfLongRows) {
  for (int64_t cols : {int64_t{255}, int64_t{256}, int64_t{100000}}) {
    const int64_t rows = 3;
    Vec x = uniform_floats(static_cast<size_t>(rows * cols), 78);
    std::fill(x.begin(), x.begin() + cols, 0.0f);  // the clamped branch
    const Vec g = uniform_floats(x.size(), 79);
    Vec y(x.size()), dx(x.size());
    cpu_->l2_normalize_rows(rows, cols, x.data(), y.data());
    cpu_->l2_normalize_rows_backward(rows, cols, x.data(), g.data(), dx.data());
    float *gx = put(x), *gg = put(g), *gy = put(Vec(x.size())), *gdx = put(Vec(x.size()));
    dev_->l2_normalize_rows(rows, cols, gx, gy);
    dev_->l2_normalize_rows_backward(rows, cols, gx, gg, gdx);
    const Vec hy = get(gy, x.size()), hdx = get(gdx, x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_NEAR(hy[i], y[i], 1e-6f * std::fabs(y[i]) + 1e-9f) << "y " << i << ", cols " << cols;
      ASSERT_NEAR(hdx[i], dx[i], 1e-5f * std::fabs(dx[i]) + 1e-7f)
          << "dx " << i << ", cols " << cols;
    }
  }
}

TEST_F(GpuSegmentReductions, EmbeddingGradientSumsInIndexOrderAtAnyVocabularySize) {
  struct Case {
    int64_t n, input_dim, output_dim;
  };
  // 40M rows: the old kernel's grid.y (rows / 512) exceeded 65,535.
  for (const Case& c : {Case{5000, 1000, 7}, Case{1, 1, 1}, Case{3000, int64_t{40} << 20, 2}}) {
    const std::string what = std::to_string(c.n) + " indices, " + std::to_string(c.input_dim) +
                             " x " + std::to_string(c.output_dim);
    const Vec u = uniform_floats(static_cast<size_t>(c.n), 80);
    Vec idx(u.size());
    for (size_t i = 0; i < u.size(); ++i)  // many repeats, and the last row
      idx[i] = std::floor(u[i] * u[i] * static_cast<float>(c.input_dim - 1));
    idx.back() = static_cast<float>(c.input_dim - 1);
    const Vec dy = uniform_floats(static_cast<size_t>(c.n * c.output_dim), 81);
    const auto table = static_cast<size_t>(c.input_dim * c.output_dim);
    Vec want(table, 5.0f);
    cpu_->embedding_backward(c.n, c.input_dim, c.output_dim, idx.data(), dy.data(), want.data());
    float *gi = put(idx), *gdy = put(dy);
    bufs_.push_back(dev_->allocate(table * sizeof(float)));
    auto* gt = static_cast<float*>(bufs_.back().get());
    dev_->fill(static_cast<int64_t>(table), gt, 5.0f);
    dev_->embedding_backward(c.n, c.input_dim, c.output_dim, gi, gdy, gt);
    EXPECT_EQ(get(gt, table), want) << "not the CPU's sums in index order, " << what;
  }
}

}  // namespace
}  // namespace mr
