// BatchNormalization: the ops against a double-precision reference, the
// layer's gradients against finite differences, and its semantics over
// replicas (synchronized: the same numbers on 1, 2 and 4 replicas;
// per-replica: statistics of each slice, moving statistics averaged weighted
// by rows, replicas identical).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "data/array_source.h"
#include "nn/executor.h"
#include "tests/graphs.h"
#include "train/loop.h"
#include "train/model.h"

namespace mr {
namespace {

std::unique_ptr<Layer> batch_norm(bool synchronized, double momentum = 0.99) {
  return make_layer("BatchNormalization",
                    Json{{"name", "bn"}, {"synchronized", synchronized}, {"momentum", momentum}},
                    0);
}

std::vector<float> wave(int64_t n, double a, double b) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] =
        static_cast<float>(std::sin(a * static_cast<double>(i) + b) * 2.0 + 0.5);
  return v;
}

TEST(BatchNormOps, MatchADoublePrecisionReference) {
  const int64_t rows = 37, cols = 5;
  const float eps = 1e-3f;
  const auto x = wave(rows * cols, 0.71, 0.2), dy = wave(rows * cols, 0.33, 1.1);
  const auto gamma = wave(cols, 1.3, 0.4), beta = wave(cols, 0.9, 2.0);
  std::vector<double> mean(cols, 0), var(cols, 0), sdy(cols, 0), sdx(cols, 0);
  for (int64_t c = 0; c < cols; ++c) {
    for (int64_t r = 0; r < rows; ++r) mean[c] += x[r * cols + c];
    mean[c] /= rows;
    for (int64_t r = 0; r < rows; ++r) var[c] += std::pow(x[r * cols + c] - mean[c], 2);
    var[c] /= rows;
    for (int64_t r = 0; r < rows; ++r) {
      const double xhat = (x[r * cols + c] - mean[c]) / std::sqrt(var[c] + eps);
      sdy[c] += dy[r * cols + c];
      sdx[c] += dy[r * cols + c] * xhat;
    }
  }
  CpuBackend be(0, 2);
  std::vector<float> m(cols), v(cols), y(rows * cols), s1(cols), s2(cols), dx(rows * cols);
  be.column_moments(rows, cols, x.data(), nullptr, 1.0f / rows, m.data());
  be.column_moments(rows, cols, x.data(), m.data(), 1.0f / rows, v.data());
  be.batch_norm_forward(rows, cols, x.data(), m.data(), v.data(), gamma.data(), beta.data(), eps,
                        y.data());
  be.batch_norm_backward_reduce(rows, cols, dy.data(), x.data(), m.data(), v.data(), eps, s1.data(),
                                s2.data());
  be.batch_norm_backward(rows, cols, dy.data(), x.data(), m.data(), v.data(), gamma.data(), eps,
                         s1.data(), s2.data(), 1.0f / rows, dx.data());
  for (int64_t c = 0; c < cols; ++c) {
    EXPECT_NEAR(m[c], mean[c], 1e-6);
    EXPECT_NEAR(v[c], var[c], 1e-5 * var[c]);
    EXPECT_NEAR(s1[c], sdy[c], 1e-5 * (1 + std::fabs(sdy[c])));
    EXPECT_NEAR(s2[c], sdx[c], 1e-5 * (1 + std::fabs(sdx[c])));
    const double is = 1.0 / std::sqrt(var[c] + eps);
    for (int64_t r = 0; r < rows; ++r) {
      const double xhat = (x[r * cols + c] - mean[c]) * is;
      const double yr = gamma[c] * xhat + beta[c];
      const double dxr = gamma[c] * is * (dy[r * cols + c] - sdy[c] / rows - xhat * sdx[c] / rows);
      EXPECT_NEAR(y[r * cols + c], yr, 1e-5 * (1 + std::fabs(yr)));
      EXPECT_NEAR(dx[r * cols + c], dxr, 1e-5 * (1 + std::fabs(dxr)));
    }
  }
  // No rows: the sums are zeros, so an empty replica adds nothing.
  be.column_moments(0, cols, x.data(), nullptr, 0.0f, m.data());
  be.batch_norm_backward_reduce(0, cols, dy.data(), x.data(), m.data(), v.data(), eps, s1.data(),
                                s2.data());
  for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(m[c] + s1[c] + s2[c], 0.0f);
}

// Loss of a Dense -> BN -> Dense chain over per-sample inputs of shape (2, 3)
// (BN normalizes the last axis over batch and the first axis), and the
// gradients of the trainable variables, gamma and beta included.
double chain_loss(const Graph& g, const std::vector<float>& params, std::vector<float>* grads) {
  CpuBackend be(0, 1);
  const int64_t rows = 7;
  Executor ex(g, be);
  ex.reserve(rows);
  const auto x = wave(rows * 6, 0.37, 0.1);
  be.upload(ex.input(0), x.data(), x.size() * sizeof(float));
  std::vector<float> state = g.initial_state();
  ex.forward(test_pass(rows, 0, params.data(), state.data()));
  const auto t = wave(rows * 2 * 2, 0.5, 0.7);
  double acc = 0;
  be.loss(LossKind::mean_squared_error, LossParams{}, rows * 2, 2, ex.output(0), t.data(), nullptr,
          1.0f / (rows * 2), grads ? ex.output_grad(0) : nullptr, &acc);
  if (grads) {
    grads->assign(params.size(), 0.0f);
    ex.backward(test_pass(rows, 0, params.data(), state.data()), grads->data());
  }
  return acc / (rows * 2);
}

TEST(BatchNormLayer, GradientsMatchFiniteDifferences) {
  for (bool center_scale : {true, false}) {
    std::vector<std::unique_ptr<Layer>> l;
    l.push_back(make_input_layer(Shape{2, 3}));
    Initializer n;
    n.kind = Initializer::Kind::random_normal;
    n.b = 0.5;
    n.seed = 3;
    l.push_back(make_dense(4, Activation::linear, true, n, n));
    l.push_back(make_layer("BatchNormalization",
                           Json{{"name", "bn"},
                                {"center", center_scale},
                                {"scale", center_scale},
                                {"gamma_initializer", "glorot_uniform"},
                                {"beta_initializer", "glorot_uniform"}},
                           5));
    l.push_back(make_dense(2, Activation::tanh, true, glorot_uniform(4), n));
    const auto g = chain(std::move(l));
    EXPECT_EQ(g->states().size(), 2u);
    EXPECT_EQ(g->node_weights(2).size(), center_scale ? 4u : 2u);
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
    EXPECT_GE(checked, center_scale ? 34 : 26);
  }
}

// Input(6) -> Dense(8) -> BN -> Dense(3), sparse CE, trained 4 epochs of
// batches 10, 10, 3 on `replicas` CPU replicas.
struct Trained {
  std::vector<float> params, state;
};

Trained train_bn(int replicas, bool synchronized, double lr = 0.05) {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{6}));
  l.push_back(make_dense(8, Activation::relu, true, glorot_uniform(1), Initializer{}));
  l.push_back(batch_norm(synchronized, 0.9));
  l.push_back(make_dense(3, Activation::linear, true, glorot_uniform(2), Initializer{}));
  std::vector<DeviceSpec> devs;
  for (int i = 0; i < replicas; ++i) devs.push_back(DeviceSpec{DeviceKind::cpu, i});
  Model m(chain(std::move(l)), devs, 1);
  CompileConfig c;
  c.optimizer.learning_rate = lr;
  c.loss.from_logits = true;
  m.compile(c);
  auto d = std::make_shared<ArrayData>();
  d->rows = 23;
  d->widths = {6, 1};
  d->parts.resize(2);
  d->parts[0] = wave(23 * 6, 0.41, 0.3);
  for (int64_t i = 0; i < 23; ++i) d->parts[1].push_back(static_cast<float>(i % 3));
  ArraySource src(d, 10, true, 5);
  LoopHooks hooks;
  for (int e = 0; e < 4; ++e) train_epoch(m, src, e, -1, hooks);
  for (int r = 1; r < replicas; ++r) {
    EXPECT_EQ(m.get_params(r), m.get_params(0)) << "replica " << r;
    EXPECT_EQ(m.get_state(r), m.get_state(0)) << "replica " << r;
  }
  return {m.get_params(), m.get_state()};
}

double rel(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
    den += double{b[i]} * b[i];
  }
  return std::sqrt(num / den);
}

TEST(BatchNormReplicas, SynchronizedGivesTheSameWeightsOnOneTwoAndFourReplicas) {
  const Trained one = train_bn(1, true);
  for (int n : {2, 4}) {  // 4 replicas: the last batch of 3 leaves one replica empty
    const Trained t = train_bn(n, true);
    EXPECT_LT(rel(t.params, one.params), 1e-5) << n << " replicas";
    EXPECT_LT(rel(t.state, one.state), 1e-5) << n << " replicas";
  }
  // One replica: synchronized or not is the same computation.
  const Trained plain = train_bn(1, false);
  EXPECT_EQ(plain.params, one.params);
  EXPECT_EQ(plain.state, one.state);
}

TEST(BatchNormReplicas, PerReplicaStatisticsAndRowWeightedMovingAverages) {
  // A BN on the inputs themselves and a learning rate of 0: after one step of
  // 7 rows on 2 replicas (4 + 3 rows), moving_mean = 0.1 * global mean
  // (the row-weighted mean of the slices' means) and moving_variance =
  // 0.9 + 0.1 * (row-weighted mean of the slices' biased variances).
  for (int replicas : {2, 8}) {  // 8 replicas: one row each, one empty
    std::vector<std::unique_ptr<Layer>> l;
    l.push_back(make_input_layer(Shape{2}));
    l.push_back(batch_norm(false, 0.9));
    l.push_back(make_dense(2, Activation::linear, true, glorot_uniform(2), Initializer{}));
    std::vector<DeviceSpec> devs;
    for (int i = 0; i < replicas; ++i) devs.push_back(DeviceSpec{DeviceKind::cpu, i});
    Model m(chain(std::move(l)), devs, 1);
    CompileConfig c;
    c.optimizer.kind = OptimizerConfig::Kind::sgd;
    c.optimizer.learning_rate = 0;
    c.loss.from_logits = true;
    m.compile(c);
    const int64_t rows = 7;
    std::vector<float> x = wave(rows * 2, 0.9, 0.1), y(rows, 1.0f);
    HostBatch b;
    b.rows = rows;
    b.parts = {HostComponent{x.data(), 2}, HostComponent{y.data(), 1}};
    m.train_step(b);
    std::vector<double> want_mean(2, 0), want_var(2, 0);
    for (int r = 0; r < replicas; ++r) {
      const int64_t n = rows / replicas + (r < rows % replicas ? 1 : 0);
      const int64_t begin = r * (rows / replicas) + std::min<int64_t>(r, rows % replicas);
      for (int64_t col = 0; col < 2 && n > 0; ++col) {
        double mean = 0, var = 0;
        for (int64_t i = begin; i < begin + n; ++i) mean += x[i * 2 + col];
        mean /= n;
        for (int64_t i = begin; i < begin + n; ++i) var += std::pow(x[i * 2 + col] - mean, 2);
        var /= n;
        want_mean[col] += mean * n / rows;
        want_var[col] += var * n / rows;
      }
    }
    for (int r = 0; r < replicas; ++r) {
      const std::vector<float> s = m.get_state(r);
      const auto& st = m.graph().states();
      for (int64_t col = 0; col < 2; ++col) {
        EXPECT_NEAR(s[st[0].offset + col], 0.1 * want_mean[col], 1e-6) << replicas;
        EXPECT_NEAR(s[st[1].offset + col], 0.9 + 0.1 * want_var[col], 1e-6) << replicas;
      }
    }
  }
}

TEST(BatchNormLayer, RejectsWhatItCannotDo) {
  EXPECT_THROW(make_layer("BatchNormalization", Json{{"name", "b"}, {"momentum", 2.0}}, 0), Error);
  EXPECT_THROW(make_layer("BatchNormalization", Json{{"name", "b"}, {"beta_regularizer", "l2"}}, 0),
               Error);
  EXPECT_THROW(make_layer("BatchNormalization", Json{{"name", "b"}, {"renorm", true}}, 0), Error);
  const auto bn = make_layer("BatchNormalization", Json{{"name", "b"}, {"axis", 1}}, 0);
  EXPECT_THROW(bn->output_shape({Shape{3, 4}}), Error);  // axis 1 of (None, 3, 4) is not the last
  EXPECT_NO_THROW(bn->output_shape({Shape{4}}));
  const auto add = make_layer("Add", Json{{"name", "a"}}, 0);
  EXPECT_THROW(add->output_shape({Shape{4}}), Error);
  EXPECT_THROW(add->output_shape({Shape{4}, Shape{3}}), Error);
  EXPECT_EQ(add->output_shape({Shape{4}, Shape{4}, Shape{4}}), Shape{4});
}

}  // namespace
}  // namespace mr
