// The issue-12 ops on a GPU against the CPU backend: the new activations
// (with parameters), log_softmax, strided_copy (copies, windows, repeats and
// sums), extremum and its gradient, and the row l2 normalisation. Skipped
// without a CUDA device (a failure under MIRRORED_TEST_CUDA=1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "core/rng.h"
#include "tests/test_util.h"

namespace mr {
namespace {

std::vector<float> rand_vec(size_t n, uint32_t stream, float lo = -1.0f, float hi = 1.0f) {
  const RandomStream rs(777, 0, stream);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * rs.uniform(i);
  return v;
}

class GpuShapeOps : public ::testing::Test {
 protected:
  void SetUp() override {
    MR_REQUIRE_GPUS(1);
    cpu_ = make_cpu_backend(0, 2);
    dev_ = make_cuda_backend(0, 0);
  }
  void TearDown() override { bufs_.clear(); }

  // A device copy of v; returns its pointer.
  float* put(const std::vector<float>& v) {
    bufs_.push_back(dev_->allocate(std::max<size_t>(1, v.size()) * sizeof(float)));
    dev_->upload(bufs_.back().get(), v.data(), v.size() * sizeof(float));
    return static_cast<float*>(bufs_.back().get());
  }
  std::vector<float> get(const float* d, size_t n) {
    std::vector<float> v(n);
    dev_->download(v.data(), d, n * sizeof(float));
    return v;
  }
  static double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      diff = std::max(diff, std::fabs(double{a[i]} - b[i]));
      scale = std::max(scale, std::fabs(double{b[i]}));
    }
    return scale > 0 ? diff / scale : diff;
  }

  std::unique_ptr<Backend> cpu_, dev_;
  std::vector<DeviceBuffer> bufs_;
};

TEST_F(GpuShapeOps, ActivationsMatchTheCpu) {
  const int64_t rows = 37, cols = 29, n = rows * cols;
  const auto x = rand_vec(n, 1, -8.0f, 8.0f), dy = rand_vec(n, 2);
  ActivationParams relu_p;
  relu_p.alpha = 0.1f;
  relu_p.max_value = 4.0f;
  relu_p.threshold = 0.5f;
  struct C {
    Activation act;
    ActivationParams p;
  };
  for (const C& c :
       {C{Activation::elu, {}}, C{Activation::selu, {}}, C{Activation::silu, {}},
        C{Activation::leaky_relu, {}}, C{Activation::relu6, {}}, C{Activation::softplus, {}},
        C{Activation::softsign, {}}, C{Activation::hard_sigmoid, {}}, C{Activation::hard_silu, {}},
        C{Activation::exponential, {}}, C{Activation::mish, {}}, C{Activation::log_softmax, {}},
        C{Activation::relu, relu_p}}) {
    std::vector<float> y(n), dx(n);
    cpu_->activation_forward(c.act, rows, cols, x.data(), y.data(), c.p);
    cpu_->activation_backward(c.act, rows, cols, x.data(), y.data(), dy.data(), dx.data(), c.p);
    float *dxp = put(x), *dyp = put(std::vector<float>(n)), *ddy = put(dy),
          *ddx = put(std::vector<float>(n));
    dev_->activation_forward(c.act, rows, cols, dxp, dyp, c.p);
    dev_->activation_backward(c.act, rows, cols, dxp, dyp, ddy, ddx, c.p);
    EXPECT_LE(max_rel(get(dyp, n), y), 1e-5) << static_cast<int>(c.act);
    EXPECT_LE(max_rel(get(ddx, n), dx), 1e-5) << static_cast<int>(c.act);
  }
}

TEST_F(GpuShapeOps, StridedCopyExtremumAndNormalizeMatchTheCpu) {
  // UpSampling2D's backward box: (rows 3, 4, [2], 5, [3], channels 2), summed
  // over the bracketed axes.
  const auto src = rand_vec(3 * 4 * 2 * 5 * 3 * 2, 3);
  StridedCopy c;
  c.rank = 4;
  const int64_t dims[] = {3, 4, 5, 2}, ss[] = {240, 60, 6, 1}, ds[] = {40, 10, 2, 1};
  for (int k = 0; k < 4; ++k) {
    c.dims[k] = dims[k];
    c.src_stride[k] = ss[k];
    c.dst_stride[k] = ds[k];
  }
  c.sum_rank = 2;
  c.sum_dims[0] = 2;
  c.sum_stride[0] = 30;
  c.sum_dims[1] = 3;
  c.sum_stride[1] = 2;
  std::vector<float> want(120);
  cpu_->strided_copy(c, src.data(), want.data());
  float* dsrc = put(src);
  float* ddst = put(std::vector<float>(120));
  dev_->strided_copy(c, dsrc, ddst);
  EXPECT_EQ(get(ddst, 120), want);  // same sums in the same order

  const int64_t n = 1000;
  auto a = rand_vec(n, 4), b = rand_vec(n, 5), dy = rand_vec(n, 6);
  for (int64_t i = 0; i < n; i += 7) b[static_cast<size_t>(i)] = a[static_cast<size_t>(i)];  // ties
  std::vector<float> y(n), taken(n, 0.0f), ga(n), gb(n);
  cpu_->extremum(n, true, a.data(), b.data(), y.data());
  cpu_->extremum_grad(n, a.data(), y.data(), dy.data(), taken.data(), ga.data());
  cpu_->extremum_grad(n, b.data(), y.data(), dy.data(), taken.data(), gb.data());
  float *da = put(a), *db = put(b), *ddy = put(dy), *dy_out = put(std::vector<float>(n)),
        *dt = put(std::vector<float>(n)), *dga = put(std::vector<float>(n)),
        *dgb = put(std::vector<float>(n));
  dev_->extremum(n, true, da, db, dy_out);
  dev_->extremum_grad(n, da, dy_out, ddy, dt, dga);
  dev_->extremum_grad(n, db, dy_out, ddy, dt, dgb);
  EXPECT_EQ(get(dy_out, n), y);
  EXPECT_EQ(get(dga, n), ga);
  EXPECT_EQ(get(dgb, n), gb);

  const int64_t rows = 17, cols = 9;
  auto x = rand_vec(rows * cols, 7);
  std::fill(x.begin(), x.begin() + cols, 0.0f);  // a zero row: the clamped branch
  std::vector<float> yn(x.size()), gx(x.size());
  const auto g = rand_vec(x.size(), 8);
  cpu_->l2_normalize_rows(rows, cols, x.data(), yn.data());
  cpu_->l2_normalize_rows_backward(rows, cols, x.data(), g.data(), gx.data());
  float *dx = put(x), *dyn = put(std::vector<float>(x.size())), *dg = put(g),
        *dgx = put(std::vector<float>(x.size()));
  dev_->l2_normalize_rows(rows, cols, dx, dyn);
  dev_->l2_normalize_rows_backward(rows, cols, dx, dg, dgx);
  EXPECT_LE(max_rel(get(dyn, x.size()), yn), 1e-6);
  EXPECT_LE(max_rel(get(dgx, x.size()), gx), 1e-6);
}

}  // namespace
}  // namespace mr
