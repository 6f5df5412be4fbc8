// LayerNormalization: the ops against a double-precision reference (plain
// and rms_scaling, with and without gamma / beta, 0 rows), the layer's
// gradients against finite differences through a chain, its config and
// weights, and on a GPU the CUDA ops against the CPU's.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "nn/executor.h"
#include "nn/layers/registry.h"
#include "tests/graphs.h"
#include "tests/test_util.h"

namespace mr {
namespace {

std::vector<float> wave(int64_t n, double a, double b, double scale = 2.0, double shift = 0.5) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] =
        static_cast<float>(std::sin(a * static_cast<double>(i) + b) * scale + shift);
  return v;
}

// Double-precision layer norm of each row and its backward, written from
// the definitions (independent of the kernels' factored formulas: the input
// gradient is d/dx of sum(dy * y) by the chain rule through mean and var).
struct Ref {
  std::vector<double> y, dx, dgamma, dbeta;
};
Ref reference(int64_t rows, int64_t cols, const std::vector<float>& x, const std::vector<float>& dy,
              const float* gamma, const float* beta, double eps, bool rms) {
  Ref r;
  r.y.assign(x.size(), 0);
  r.dx.assign(x.size(), 0);
  r.dgamma.assign(static_cast<size_t>(cols), 0);
  r.dbeta.assign(static_cast<size_t>(cols), 0);
  for (int64_t i = 0; i < rows; ++i) {
    const float* xr = x.data() + i * cols;
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += xr[c];
    mean /= cols;
    for (int64_t c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    var /= cols;
    const double inv = 1.0 / std::sqrt(var + eps);
    // y_c = (x_c - [mean]) * inv * g_c + b_c. dy/dx_j through x_c, mean, inv:
    // d inv / d x_j = -inv^3 (x_j - mean) / cols, d mean / d x_j = 1 / cols.
    for (int64_t c = 0; c < cols; ++c) {
      const double g = gamma ? gamma[c] : 1.0;
      const double u = (rms ? xr[c] : xr[c] - mean) * inv;
      const double d = dy[static_cast<size_t>(i * cols + c)];
      r.y[static_cast<size_t>(i * cols + c)] = u * g + (beta ? beta[c] : 0.0);
      r.dgamma[static_cast<size_t>(c)] += d * u;
      r.dbeta[static_cast<size_t>(c)] += d;
    }
    for (int64_t j = 0; j < cols; ++j) {
      const double dinv = -inv * inv * inv * (xr[j] - mean) / cols;
      double s = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const double g = gamma ? gamma[c] : 1.0;
        const double centered = rms ? xr[c] : xr[c] - mean;
        double dyc_dxj = centered * dinv;  // through inv
        if (c == j) dyc_dxj += inv;
        if (!rms) dyc_dxj -= inv / cols;  // through mean
        s += dy[static_cast<size_t>(i * cols + c)] * g * dyc_dxj;
      }
      r.dx[static_cast<size_t>(i * cols + j)] = s;
    }
  }
  return r;
}

TEST(LayerNormOps, MatchADoublePrecisionReference) {
  const int64_t rows = 13, cols = 37;
  const float eps = 1e-3f;
  // A large offset against the spread: the two-pass variance stays accurate.
  const auto x = wave(rows * cols, 0.71, 0.2, 2.0, 300.0), dy = wave(rows * cols, 0.33, 1.1);
  const auto gamma = wave(cols, 1.3, 0.4), beta = wave(cols, 0.9, 2.0);
  CpuBackend be(0, 2);
  for (bool rms : {false, true})
    for (bool affine : {true, false}) {
      const float* g = affine ? gamma.data() : nullptr;
      const float* b = affine && !rms ? beta.data() : nullptr;
      const Ref ref = reference(rows, cols, x, dy, g, b, eps, rms);
      std::vector<float> y(x.size()), stats(2 * rows), dx(x.size()), dg(cols), db(cols);
      be.layer_norm_forward(rows, cols, x.data(), g, b, eps, rms, stats.data(), y.data());
      be.layer_norm_backward(rows, cols, dy.data(), x.data(), g, stats.data(), rms, dx.data(),
                             dg.data(), db.data());
      double ymax = 0, dxmax = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        ymax = std::max(ymax, std::fabs(y[i] - ref.y[i]) / (1 + std::fabs(ref.y[i])));
        dxmax = std::max(dxmax, std::fabs(dx[i] - ref.dx[i]) / (1 + std::fabs(ref.dx[i])));
      }
      EXPECT_LT(ymax, 2e-4) << "rms " << rms << " affine " << affine;
      EXPECT_LT(dxmax, 2e-4) << "rms " << rms << " affine " << affine;
      for (int64_t c = 0; c < cols; ++c) {
        EXPECT_NEAR(dg[c], ref.dgamma[c], 2e-4 * (1 + std::fabs(ref.dgamma[c])));
        EXPECT_NEAR(db[c], ref.dbeta[c], 1e-5 * (1 + std::fabs(ref.dbeta[c])));
      }
    }
  // No rows: zero parameter gradients, nothing else touched.
  std::vector<float> dg(cols, 7.0f), db(cols, 7.0f);
  be.layer_norm_backward(0, cols, dy.data(), x.data(), gamma.data(), nullptr, false, nullptr,
                         dg.data(), db.data());
  for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(dg[c] + db[c], 0.0f);
}

// Loss = 0.5 * sum((LN(x) W)^2)-like: Input(3, 4) -> LN(axes) -> Dense(2), MSE.
double chain_loss(const Graph& g, const std::vector<float>& params, std::vector<float>* grads) {
  CpuBackend be(0, 1);
  const int64_t rows = 5;
  Executor ex(g, be);
  ex.reserve(rows);
  const auto x = wave(rows * 12, 0.37, 0.1);
  be.upload(ex.input(0), x.data(), x.size() * sizeof(float));
  std::vector<float> state = g.initial_state();
  ex.forward(test_pass(rows, 0, params.data(), state.data()));
  const auto t = wave(rows * 3 * 2, 0.5, 0.7);
  double acc = 0;
  be.loss(LossKind::mean_squared_error, LossParams{}, rows * 3, 2, ex.output(0), t.data(), nullptr,
          1.0f / (rows * 3), grads ? ex.output_grad(0) : nullptr, &acc);
  if (grads) {
    grads->assign(params.size(), 0.0f);
    ex.backward(test_pass(rows, 0, params.data(), state.data()), grads->data());
  }
  return acc / (rows * 3);
}

TEST(LayerNormLayer, GradientsMatchFiniteDifferences) {
  struct Case {
    Json axis;
    bool rms;
    size_t weights;
  };
  for (const Case& k : {Case{-1, false, 2}, Case{Json::array({-2, -1}), false, 2},
                        Case{Json::array({2}), true, 1}}) {
    std::vector<std::unique_ptr<Layer>> l;
    l.push_back(make_input_layer(Shape{3, 4}));
    Initializer n;
    n.kind = Initializer::Kind::random_normal;
    n.b = 0.5;
    n.seed = 3;
    l.push_back(make_dense(4, Activation::linear, true, n, n));
    l.push_back(make_layer("LayerNormalization",
                           Json{{"name", "ln"},
                                {"axis", k.axis},
                                {"rms_scaling", k.rms},
                                {"gamma_initializer", "glorot_uniform"},
                                {"beta_initializer", "glorot_uniform"}},
                           5));
    l.push_back(make_dense(2, Activation::tanh, true, glorot_uniform(4), n));
    const auto g = chain(std::move(l));
    ASSERT_EQ(g->node_weights(2).size(), k.weights);
    std::vector<float> params = g->initial_params(), grads;
    chain_loss(*g, params, &grads);
    int checked = 0;
    for (const Graph::Param& p : g->params()) {
      for (int64_t i = 0; i < p.size; ++i) {
        const size_t at = static_cast<size_t>(p.offset + i);
        const float saved = params[at], h = 3e-3f;
        params[at] = saved + h;
        const double up = chain_loss(*g, params, nullptr);
        params[at] = saved - h;
        const double down = chain_loss(*g, params, nullptr);
        params[at] = saved;
        const double fd = (up - down) / (2.0 * h);
        EXPECT_NEAR(grads[at], fd, 1e-3 + 1e-2 * std::fabs(fd)) << p.name << "[" << i << "]";
        ++checked;
      }
    }
    EXPECT_GE(checked, 30);
  }
}

TEST(LayerNormLayer, ConfigWeightsAndAxisErrors) {
  auto ln = make_layer("LayerNormalization", Json{{"name", "ln"}, {"axis", Json::array({1})}}, 0);
  const Json c = ln->config();
  EXPECT_EQ(c["axis"], Json::array({1}));
  EXPECT_EQ(c["epsilon"], 1e-3);
  EXPECT_EQ(c["rms_scaling"], false);
  for (const char* k :
       {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"})
    EXPECT_TRUE(c.contains(k) && c[k].is_null()) << k;
  const auto w = ln->weights({Shape{6}});
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].name, "gamma");
  EXPECT_EQ(w[1].name, "beta");
  EXPECT_EQ(w[0].shape, Shape{6});
  auto inner = make_layer("LayerNormalization", Json{{"name", "ln"}, {"axis", 1}}, 0);
  EXPECT_THROW(inner->output_shape({Shape{3, 4}}), Error);  // not the last axis
  EXPECT_THROW(inner->output_shape({Shape{}}), Error);      // the batch axis
  EXPECT_THROW(make_layer("LayerNormalization", Json{{"name", "ln"}, {"epsilon", 0}}, 0), Error);
}

TEST(LayerNormOps, CudaMatchesCpu) {
  MR_REQUIRE_GPUS(1);
  auto cpu = make_cpu_backend(0, 2);
  auto gpu = make_cuda_backend(0, 0);
  const int64_t rows = 67, cols = 300;
  const auto x = wave(rows * cols, 0.71, 0.2, 3.0, 10.0), dy = wave(rows * cols, 0.33, 1.1);
  const auto gamma = wave(cols, 1.3, 0.4), beta = wave(cols, 0.9, 2.0);
  auto up = [&](const std::vector<float>& v) {
    DeviceBuffer b = gpu->allocate(v.size() * sizeof(float));
    gpu->upload(b.get(), v.data(), v.size() * sizeof(float));
    return b;
  };
  auto down = [&](const DeviceBuffer& b, size_t n) {
    std::vector<float> v(n);
    gpu->download(v.data(), b.get(), n * sizeof(float));
    return v;
  };
  for (bool rms : {false, true}) {
    std::vector<float> y(x.size()), st(2 * rows), dx(x.size()), dg(cols), db(cols);
    cpu->layer_norm_forward(rows, cols, x.data(), gamma.data(), beta.data(), 1e-3f, rms, st.data(),
                            y.data());
    cpu->layer_norm_backward(rows, cols, dy.data(), x.data(), gamma.data(), st.data(), rms,
                             dx.data(), dg.data(), db.data());
    auto gx = up(x), gdy = up(dy), gg = up(gamma), gb = up(beta);
    DeviceBuffer gy = gpu->allocate(x.size() * 4), gst = gpu->allocate(2 * rows * 4),
                 gdx = gpu->allocate(x.size() * 4), gdg = gpu->allocate(cols * 4),
                 gdb = gpu->allocate(cols * 4);
    auto f = [](const DeviceBuffer& b) { return static_cast<float*>(b.get()); };
    gpu->layer_norm_forward(rows, cols, f(gx), f(gg), f(gb), 1e-3f, rms, f(gst), f(gy));
    gpu->layer_norm_backward(rows, cols, f(gdy), f(gx), f(gg), f(gst), rms, f(gdx), f(gdg), f(gdb));
    const auto y2 = down(gy, y.size()), dx2 = down(gdx, dx.size()), dg2 = down(gdg, cols),
               db2 = down(gdb, cols);
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_NEAR(y2[i], y[i], 1e-5 * (1 + std::fabs(y[i])));
      EXPECT_NEAR(dx2[i], dx[i], 1e-4 * (1 + std::fabs(dx[i])));
    }
    for (int64_t c = 0; c < cols; ++c) {
      EXPECT_NEAR(dg2[c], dg[c], 1e-4 * (1 + std::fabs(dg[c])));
      EXPECT_NEAR(db2[c], db[c], 1e-4 * (1 + std::fabs(db[c])));
    }
  }
}

}  // namespace
}  // namespace mr
