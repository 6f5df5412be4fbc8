// NaN in, NaN out, as TensorFlow does (checked in TensorFlow 2 / Keras 3.15:
// tf.nn.relu(nan) = nan, keras.activations.* of nan = nan except relu with
// a threshold and no slope (0), tf.maximum(nan, 1) = nan, reduce_max and
// GlobalMaxPooling of a NaN window = nan, softmax / layer norm / batch norm
// of a row or column holding a NaN = nan, dropout: nan where kept, 0 where
// dropped). Each op runs on the CPU backend and, when there is one, on a GPU.
// Backward at a NaN input follows TensorFlow's gradient kernels where they
// differ from the formula: relu -> 0, elu / selu -> dy (their positive branch).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/conv_geometry.h"
#include "core/device_info.h"
#include "tests/test_util.h"

namespace mr {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Runs ops on one backend through device buffers (plain host memory on the CPU).
class Ops {
 public:
  explicit Ops(std::unique_ptr<Backend> be) : be_(std::move(be)) {}
  Backend& be() { return *be_; }
  float* put(const std::vector<float>& v) {
    bufs_.push_back(be_->allocate(std::max<size_t>(1, v.size()) * sizeof(float)));
    be_->upload(bufs_.back().get(), v.data(), v.size() * sizeof(float));
    return static_cast<float*>(bufs_.back().get());
  }
  float* zeros(size_t n) { return put(std::vector<float>(n, 0.0f)); }
  std::vector<float> get(const float* d, size_t n) {
    std::vector<float> v(n);
    be_->download(v.data(), d, n * sizeof(float));
    return v;
  }

 private:
  std::unique_ptr<Backend> be_;
  std::vector<DeviceBuffer> bufs_;
};

std::vector<float> act_forward(Ops& o, Activation act, const std::vector<float>& x,
                               ActivationParams p = {}, int64_t cols = 0) {
  const int64_t n = static_cast<int64_t>(x.size());
  if (cols == 0) cols = n;
  float* dx = o.put(x);
  float* dy = o.zeros(x.size());
  o.be().activation_forward(act, n / cols, cols, dx, dy, p);
  return o.get(dy, x.size());
}

std::vector<float> act_backward(Ops& o, Activation act, const std::vector<float>& x,
                                ActivationParams p = {}) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> y = act_forward(o, act, x, p);
  float* dx_in = o.put(x);
  float* y_in = o.put(y);
  float* g = o.put(std::vector<float>(x.size(), 1.0f));
  float* out = o.zeros(x.size());
  o.be().activation_backward(act, 1, n, dx_in, y_in, g, out, p);
  return o.get(out, x.size());
}

void check_all(Ops& o) {
  const std::vector<float> x{kNaN, 1.0f, -1.0f};
  // Every element-wise activation keeps a NaN and computes the others.
  for (Activation act :
       {Activation::relu, Activation::sigmoid, Activation::tanh, Activation::gelu, Activation::elu,
        Activation::selu, Activation::silu, Activation::leaky_relu, Activation::relu6,
        Activation::softplus, Activation::softsign, Activation::hard_sigmoid, Activation::hard_silu,
        Activation::exponential, Activation::mish, Activation::linear}) {
    const std::vector<float> y = act_forward(o, act, x);
    EXPECT_TRUE(std::isnan(y[0])) << "activation " << static_cast<int>(act);
    EXPECT_TRUE(std::isfinite(y[1]) && std::isfinite(y[2])) << static_cast<int>(act);
  }
  EXPECT_EQ(act_forward(o, Activation::relu, x)[1], 1.0f);
  EXPECT_EQ(act_forward(o, Activation::relu, x)[2], 0.0f);
  // relu with parameters (Keras' relu): max_value and negative_slope keep
  // NaN; a threshold without a slope selects 0 (where(x > t, x, 0)).
  ActivationParams capped;
  capped.max_value = 6.0f;
  EXPECT_TRUE(std::isnan(act_forward(o, Activation::relu, x, capped)[0]));
  ActivationParams slope;
  slope.alpha = 0.1f;
  EXPECT_TRUE(std::isnan(act_forward(o, Activation::relu, x, slope)[0]));
  ActivationParams thr;
  thr.threshold = 0.5f;
  EXPECT_EQ(act_forward(o, Activation::relu, x, thr)[0], 0.0f);
  ActivationParams thr_slope = thr;
  thr_slope.alpha = 0.1f;
  EXPECT_TRUE(std::isnan(act_forward(o, Activation::relu, x, thr_slope)[0]));
  // Row-wise: softmax and log_softmax give NaN for the NaN's row only.
  const std::vector<float> rows{kNaN, 1.0f, 2.0f, 1.0f, 2.0f, 3.0f};
  for (Activation act : {Activation::softmax, Activation::log_softmax}) {
    const std::vector<float> y = act_forward(o, act, rows, {}, 3);
    EXPECT_TRUE(std::isnan(y[0]));
    for (int c = 3; c < 6; ++c) EXPECT_TRUE(std::isfinite(y[c]));
  }
  // Backward at a NaN input, as TensorFlow's gradient kernels: relu 0, elu 1,
  // selu scale; the smooth ones NaN.
  EXPECT_EQ(act_backward(o, Activation::relu, x)[0], 0.0f);
  EXPECT_EQ(act_backward(o, Activation::elu, x)[0], 1.0f);
  EXPECT_FLOAT_EQ(act_backward(o, Activation::selu, x)[0], 1.0507009873554805f);
  EXPECT_EQ(act_backward(o, Activation::leaky_relu, x)[0], 0.2f);
  for (Activation act : {Activation::sigmoid, Activation::tanh, Activation::gelu, Activation::silu,
                         Activation::softplus, Activation::mish})
    EXPECT_TRUE(std::isnan(act_backward(o, act, x)[0])) << static_cast<int>(act);

  // Maximum / Minimum merges: NaN in either operand gives NaN.
  {
    const std::vector<float> a{kNaN, 1.0f, 2.0f, kNaN};
    const std::vector<float> b{1.0f, kNaN, 3.0f, kNaN};
    for (bool is_max : {true, false}) {
      float* out = o.zeros(4);
      o.be().extremum(4, is_max, o.put(a), o.put(b), out);
      const std::vector<float> r = o.get(out, 4);
      EXPECT_TRUE(std::isnan(r[0]) && std::isnan(r[1]) && std::isnan(r[3]));
      EXPECT_EQ(r[2], is_max ? 3.0f : 2.0f);
    }
    // The gradient of a NaN extremum goes to the first NaN input.
    const std::vector<float> y(4, kNaN);
    float* taken = o.zeros(4);
    float* dx = o.zeros(4);
    float* dy = o.put({1.0f, 1.0f, 1.0f, 1.0f});
    o.be().extremum_grad(4, o.put(a), o.put(y), dy, taken, dx);
    const std::vector<float> g0 = o.get(dx, 4);
    o.be().extremum_grad(4, o.put(b), o.put(y), dy, taken, dx);
    const std::vector<float> g1 = o.get(dx, 4);
    EXPECT_EQ(g0, (std::vector<float>{1.0f, 0.0f, 0.0f, 1.0f}));
    EXPECT_EQ(g1, (std::vector<float>{0.0f, 1.0f, 0.0f, 0.0f}));
  }

  // Max pooling: a window holding a NaN gives NaN (first or later in the
  // window); the backward gives dy to the NaN. Average pooling: NaN.
  {
    ConvGeometry g;
    g.in_h = 1, g.in_w = 4, g.in_c = 1, g.out_h = 1, g.out_w = 2, g.out_c = 1;
    g.k_h = 1, g.k_w = 2, g.stride_h = 1, g.stride_w = 2;
    const std::vector<float> x{kNaN, 1.0f, 2.0f, kNaN};
    float* xin = o.put(x);
    float* y = o.zeros(2);
    o.be().max_pool_forward(g, 1, xin, y);
    const std::vector<float> ym = o.get(y, 2);
    EXPECT_TRUE(std::isnan(ym[0]) && std::isnan(ym[1]));
    float* dx = o.zeros(4);
    o.be().max_pool_backward(g, 1, xin, y, o.put({1.0f, 1.0f}), dx);
    EXPECT_EQ(o.get(dx, 4), (std::vector<float>{1.0f, 0.0f, 0.0f, 1.0f}));
    float* ya = o.zeros(2);
    o.be().avg_pool_forward(g, 1, xin, ya);
    const std::vector<float> yv = o.get(ya, 2);
    EXPECT_TRUE(std::isnan(yv[0]) && std::isnan(yv[1]));
    // Finite windows are unchanged.
    float* y2 = o.zeros(2);
    o.be().max_pool_forward(g, 1, o.put({3.0f, 1.0f, 2.0f, 5.0f}), y2);
    EXPECT_EQ(o.get(y2, 2), (std::vector<float>{3.0f, 5.0f}));
  }

  // Batch normalization: the column holding a NaN is NaN, the others finite.
  {
    const std::vector<float> x{kNaN, 1.0f, 2.0f, 3.0f};  // 2 x 2
    float* xin = o.put(x);
    float* mean = o.zeros(2);
    float* var = o.zeros(2);
    o.be().column_moments(2, 2, xin, nullptr, 0.5f, mean);
    o.be().column_moments(2, 2, xin, mean, 0.5f, var);
    float* y = o.zeros(4);
    o.be().batch_norm_forward(2, 2, xin, mean, var, nullptr, nullptr, 1e-3f, y);
    const std::vector<float> r = o.get(y, 4);
    EXPECT_TRUE(std::isnan(r[0]) && std::isnan(r[2]));
    EXPECT_TRUE(std::isfinite(r[1]) && std::isfinite(r[3]));
  }
  // Layer normalization: the row holding a NaN is NaN, the others finite.
  {
    const std::vector<float> x{kNaN, 1.0f, 2.0f, 3.0f};  // 2 x 2
    float* stats = o.zeros(4);
    float* y = o.zeros(4);
    o.be().layer_norm_forward(2, 2, o.put(x), nullptr, nullptr, 1e-3f, false, stats, y);
    const std::vector<float> r = o.get(y, 4);
    EXPECT_TRUE(std::isnan(r[0]) && std::isnan(r[1]));
    EXPECT_TRUE(std::isfinite(r[2]) && std::isfinite(r[3]));
  }
  // Dropout: NaN where kept, exactly 0 where dropped.
  {
    const int64_t n = 256;
    std::vector<float> x(static_cast<size_t>(n), kNaN);
    float* mask = o.zeros(static_cast<size_t>(n));
    float* y = o.zeros(static_cast<size_t>(n));
    o.be().dropout_forward(1, n, 0.5f, 42, uint64_t{0}, 0, 0, o.put(x), mask, y);
    const std::vector<float> m = o.get(mask, static_cast<size_t>(n));
    const std::vector<float> r = o.get(y, static_cast<size_t>(n));
    int kept = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (m[static_cast<size_t>(i)] != 0.0f) {
        ++kept;
        EXPECT_TRUE(std::isnan(r[static_cast<size_t>(i)]));
      } else {
        EXPECT_EQ(r[static_cast<size_t>(i)], 0.0f);
      }
    }
    EXPECT_GT(kept, 0);
    EXPECT_LT(kept, n);
  }
}

TEST(NanPropagation, Cpu) {
  Ops o(make_cpu_backend(0, 2));
  check_all(o);
}

TEST(NanPropagation, Gpu) {
  MR_REQUIRE_GPUS(1);
  Ops o(make_cuda_backend(0, 0));
  check_all(o);
}

}  // namespace
}  // namespace mr
