// The activations of issue 12 on the CPU backend: forward against
// double-precision formulas (Keras 3's definitions, written here
// independently of kernel_math.h), backward against central differences of
// those formulas (step 1e-4, tolerance 1e-5 + 1e-4 |g|), at points away from
// kinks and out to |x| = 100 (no inf or NaN where the function is finite);
// the parametrised layers (ReLU, LeakyReLU, ELU, Softmax) through their
// configs; names as Keras writes them.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"
#include "nn/layers/keras_config.h"
#include "tests/layer_harness.h"

namespace mr {
namespace {

double sigmoid_d(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double softplus_d(double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); }
double relu6_d(double x) { return std::min(std::max(x, 0.0), 6.0); }
double hard_sigmoid_d(double x) { return relu6_d(x + 3.0) / 6.0; }

struct Ref {
  Activation act;
  std::function<double(double)> f;
  std::vector<double> kinks;
  double max_x;  // |x| tested up to this (exponential overflows beyond ~88)
};

std::vector<Ref> references() {
  const double a = 1.6732632423543772848170429916717, s = 1.0507009873554804934193349852946;
  return {
      {Activation::elu, [](double x) { return x > 0 ? x : std::expm1(x); }, {0}, 100},
      {Activation::selu, [=](double x) { return s * (x > 0 ? x : a * std::expm1(x)); }, {0}, 100},
      {Activation::silu, [](double x) { return x * sigmoid_d(x); }, {}, 100},
      {Activation::leaky_relu, [](double x) { return x >= 0 ? x : 0.2 * x; }, {0}, 100},
      {Activation::relu6, relu6_d, {0, 6}, 100},
      {Activation::softplus, softplus_d, {}, 100},
      {Activation::softsign, [](double x) { return x / (1 + std::fabs(x)); }, {0}, 100},
      {Activation::hard_sigmoid, hard_sigmoid_d, {-3, 3}, 100},
      {Activation::hard_silu, [](double x) { return x * hard_sigmoid_d(x); }, {-3, 3}, 100},
      {Activation::exponential, [](double x) { return std::exp(x); }, {}, 20},
      {Activation::mish, [](double x) { return x * std::tanh(softplus_d(x)); }, {}, 100},
  };
}

std::vector<double> points(double max_x, const std::vector<double>& kinks) {
  std::vector<double> p;
  for (double x = -max_x; x <= max_x; x += max_x / 97.0) p.push_back(x);
  for (double x = -4.0; x <= 4.0; x += 0.0731) p.push_back(x);
  std::vector<double> out;
  for (double x : p) {
    bool near = false;
    for (double k : kinks) near = near || std::fabs(x - k) < 1e-3;
    if (!near) out.push_back(x);
  }
  return out;
}

TEST(Activations, ForwardAndBackwardMatchDoubleFormulas) {
  CpuBackend be(0, 2);
  for (const Ref& r : references()) {
    const std::vector<double> xs = points(r.max_x, r.kinks);
    const int64_t n = static_cast<int64_t>(xs.size());
    std::vector<float> x(xs.begin(), xs.end()), y(x.size()), dy(x.size(), 1.0f), dx(x.size());
    be.activation_forward(r.act, 1, n, x.data(), y.data());
    be.activation_backward(r.act, 1, n, x.data(), y.data(), dy.data(), dx.data());
    const char* name = activation_name(r.act);
    for (size_t i = 0; i < x.size(); ++i) {
      const double xv = x[i];  // the float input, exactly
      const double want = r.f(xv);
      ASSERT_TRUE(std::isfinite(y[i]) && std::isfinite(dx[i])) << name << " at " << xv;
      EXPECT_NEAR(y[i], want, 2e-6 * (1 + std::fabs(want))) << name << " at " << xv;
      const double h = 1e-4;
      const double fd = (r.f(xv + h) - r.f(xv - h)) / (2 * h);
      EXPECT_NEAR(dx[i], fd, 1e-5 + 1e-4 * std::fabs(fd)) << name << "' at " << xv;
    }
  }
}

TEST(Activations, ParametrisedReluFollowsKeras) {
  // Keras: relu(x, negative_slope = 0.1, max_value = 2, threshold = 0.5).
  auto f = [](double x) { return x < 0.5 ? 0.1 * (x - 0.5) : (x > 0.5 ? std::min(x, 2.0) : 0.0); };
  CpuBackend be(0, 1);
  ActivationParams p;
  p.alpha = 0.1f;
  p.max_value = 2.0f;
  p.threshold = 0.5f;
  const std::vector<double> xs = points(5, {0.5, 2});
  std::vector<float> x(xs.begin(), xs.end()), y(x.size()), dy(x.size(), 1.0f), dx(x.size());
  const int64_t n = static_cast<int64_t>(x.size());
  be.activation_forward(Activation::relu, 1, n, x.data(), y.data(), p);
  be.activation_backward(Activation::relu, 1, n, x.data(), y.data(), dy.data(), dx.data(), p);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(y[i], f(x[i]), 1e-6) << x[i];
    EXPECT_NEAR(dx[i], (f(x[i] + 1e-4) - f(x[i] - 1e-4)) / 2e-4, 1e-4) << x[i];
  }
}

TEST(Activations, LogSoftmaxIsRowWiseAndStable) {
  CpuBackend be(0, 1);
  const int64_t rows = 3, cols = 4;
  const std::vector<float> x = {0.5f,     -1.0f,  2.0f,  0.0f,  1000.0f, 0.0f,
                                -1000.0f, 999.0f, -3.0f, -3.0f, -3.0f,   -3.0f};
  std::vector<float> y(x.size()), dx(x.size());
  const std::vector<float> dy = {1, 0, 0, 0, 0.5f, -1, 2, 0, 1, 1, 1, 1};
  be.activation_forward(Activation::log_softmax, rows, cols, x.data(), y.data());
  be.activation_backward(Activation::log_softmax, rows, cols, x.data(), y.data(), dy.data(),
                         dx.data());
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -1e300, s = 0, sdy = 0;
    for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, double{x[r * cols + c]});
    for (int64_t c = 0; c < cols; ++c) s += std::exp(x[r * cols + c] - mx);
    for (int64_t c = 0; c < cols; ++c) sdy += dy[r * cols + c];
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r * cols + c);
      const double ls = x[i] - mx - std::log(s);
      EXPECT_NEAR(y[i], ls, 1e-5 * (1 + std::fabs(ls)));
      EXPECT_NEAR(dx[i], dy[i] - std::exp(ls) * sdy, 1e-6);
    }
  }
}

TEST(Activations, LayersReadAndWriteKerasConfigs) {
  LayerRun relu("ReLU", Json{{"name", "r"}, {"max_value", 6.0}, {"negative_slope", 0.0}},
                {Shape{4}});
  const Vec y = relu.forward({{-1, 3, 7, 6.5f}}, 1);
  EXPECT_EQ(y, (Vec{0, 3, 6, 6}));
  EXPECT_EQ(relu.layer().config()["max_value"], 6.0);
  EXPECT_EQ(relu.layer().config()["threshold"], 0.0);
  LayerRun leaky_relu("ReLU", Json{{"name", "r"}, {"negative_slope", 0.1}}, {Shape{2}});
  EXPECT_EQ(leaky_relu.layer().config()["negative_slope"], 0.1);  // written back as given
  LayerRun plain("ReLU", Json{{"name", "r"}}, {Shape{2}});
  EXPECT_TRUE(plain.layer().config()["max_value"].is_null());
  EXPECT_THROW(LayerRun("ReLU", Json{{"name", "r"}, {"max_value", -1}}, {Shape{2}}), Error);

  LayerRun leaky("LeakyReLU", Json{{"name", "l"}}, {Shape{2}});  // Keras 3 layer default 0.3
  EXPECT_EQ(leaky.forward({{-2, 2}}, 1), (Vec{-0.6f, 2}));
  expect_fd(leaky, 2, leaky.inputs(2, 0.3), 1e-3, 2e-3);
  LayerRun elu("ELU", Json{{"name", "e"}, {"alpha", 0.5}}, {Shape{3}});
  const Vec e = elu.forward({{-1, 0.5f, -20}}, 1);
  EXPECT_NEAR(e[0], 0.5 * std::expm1(-1.0), 1e-7);
  EXPECT_NEAR(e[2], -0.5, 1e-7);
  expect_fd(elu, 2, elu.inputs(2, 0.3), 1e-3, 2e-3);
  EXPECT_EQ(elu.layer().config()["alpha"], 0.5);

  LayerRun sm("Softmax", Json{{"name", "s"}, {"axis", 2}}, {Shape{2, 3}});
  expect_fd(sm, 2, sm.inputs(2, 0.3), 1e-3, 2e-3);
  EXPECT_THROW(LayerRun("Softmax", Json{{"name", "s"}, {"axis", 1}}, {Shape{2, 3}}), Error);

  // Names as Keras writes them, aliases read.
  EXPECT_EQ(activation_from_name("swish"), Activation::silu);
  EXPECT_EQ(activation_from_name("hard_swish"), Activation::hard_silu);
  for (const char* nm : {"elu", "selu", "silu", "leaky_relu", "relu6", "softplus", "softsign",
                         "hard_sigmoid", "hard_silu", "exponential", "mish", "log_softmax"})
    EXPECT_STREQ(activation_name(activation_from_name(nm)), nm);
  EXPECT_THROW(activation_from_name("swishy"), Error);
  LayerRun act("Activation", Json{{"name", "a"}, {"activation", "swish"}}, {Shape{3}});
  EXPECT_EQ(act.layer().config()["activation"], "silu");
  expect_fd(act, 2, act.inputs(2, 0.3), 1e-3, 2e-3);
}

}  // namespace
}  // namespace mr
