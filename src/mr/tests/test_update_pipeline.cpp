// The post-backward pipeline (train/update.h) on a model: frozen variables
// get no update, global_clipnorm takes the norm of the all-reduced gradient
// of the trainable variables only (so 1 and 3 replicas agree), gradient
// accumulation applies the mean every n-th step; against a double-precision
// reference of one dense layer with MSE and SGD.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/graphs.h"
#include "train/model.h"

namespace mr {
namespace {

Initializer normal(uint64_t seed, double sd) {
  Initializer i;
  i.kind = Initializer::Kind::random_normal;
  i.b = sd;
  i.seed = seed;
  return i;
}

constexpr int64_t kIn = 3, kOut = 2, kRows = 7;

std::shared_ptr<const Graph> dense_graph() {
  std::vector<GraphNode> nodes(2);
  nodes[0].name = "input_layer";
  nodes[0].layer = make_input_layer(Shape{kIn});
  nodes[1].name = "dense";
  nodes[1].layer = make_dense(kOut, Activation::linear, true, normal(1, 0.5), normal(2, 0.3));
  nodes[1].inputs = {0};
  return std::make_shared<const Graph>(std::move(nodes), std::vector<int>{0}, std::vector<int>{1});
}

struct Data {
  std::vector<float> x, y;
  HostBatch batch() {
    HostBatch b;
    b.rows = kRows;
    b.parts = {{x.data(), kIn}, {y.data(), kOut}};
    return b;
  }
};

Data data(int shift) {
  Data d;
  for (int64_t i = 0; i < kRows * kIn; ++i)
    d.x.push_back(static_cast<float>(std::sin(1.7 * i + shift)));
  for (int64_t i = 0; i < kRows * kOut; ++i)
    d.y.push_back(static_cast<float>(std::cos(0.9 * i - shift)));
  return d;
}

// The MSE gradient of the dense layer's kernel and bias at p, in double.
void gradient(const std::vector<float>& p, const Graph& g, const Data& d, std::vector<double>& gw,
              std::vector<double>& gb) {
  const auto& prm = g.params();
  gw.assign(kIn * kOut, 0.0);
  gb.assign(kOut, 0.0);
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t j = 0; j < kOut; ++j) {
      double z = p[static_cast<size_t>(prm[1].offset + j)];
      for (int64_t k = 0; k < kIn; ++k)
        z += double{d.x[r * kIn + k]} * p[static_cast<size_t>(prm[0].offset + k * kOut + j)];
      const double dz = 2.0 * (z - d.y[r * kOut + j]) / (kOut * kRows);
      gb[j] += dz;
      for (int64_t k = 0; k < kIn; ++k) gw[k * kOut + j] += d.x[r * kIn + k] * dz;
    }
}

CompileConfig sgd_mse() {
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::sgd;
  c.optimizer.learning_rate = 0.5;
  c.loss.kind = LossKind::mean_squared_error;
  c.loss.name = "mse";
  return c;
}

std::vector<DeviceSpec> cpus(int n) {
  std::vector<DeviceSpec> d;
  for (int i = 0; i < n; ++i) d.push_back(DeviceSpec{DeviceKind::cpu, i});
  return d;
}

TEST(UpdatePipeline, FrozenBiasAndGlobalClipnormOnOneAndThreeReplicas) {
  CompileConfig c = sgd_mse();
  c.optimizer.global_clipnorm = 0.05;  // well below the gradient's norm: clipping acts
  c.trainable = {1, 0};                // the kernel trains, the bias is frozen
  std::vector<std::vector<float>> results;
  for (int replicas : {1, 3}) {
    Model m(dense_graph(), cpus(replicas), 1);
    m.compile(c);
    const std::vector<float> p0 = m.get_params();
    Data d = data(0);
    m.train_step(d.batch());
    const std::vector<float> p1 = m.get_params();
    std::vector<double> gw, gb;
    gradient(p0, m.graph(), d, gw, gb);
    double sq = 0;
    for (double v : gw) sq += v * v;  // the frozen bias is not part of the norm
    const double norm = std::sqrt(sq);
    ASSERT_GT(norm, 0.05);
    const auto& prm = m.graph().params();
    for (int64_t i = 0; i < kIn * kOut; ++i)
      EXPECT_NEAR(p1[static_cast<size_t>(prm[0].offset + i)],
                  p0[static_cast<size_t>(prm[0].offset + i)] - 0.5 * gw[i] * 0.05 / norm, 1e-6)
          << replicas << " replica(s), kernel " << i;
    for (int64_t j = 0; j < kOut; ++j)
      EXPECT_EQ(p1[static_cast<size_t>(prm[1].offset + j)],
                p0[static_cast<size_t>(prm[1].offset + j)])
          << "the frozen bias moved";
    results.push_back(p1);
  }
  for (size_t i = 0; i < results[0].size(); ++i) EXPECT_NEAR(results[1][i], results[0][i], 1e-7);
}

TEST(UpdatePipeline, AccumulationAppliesTheMeanEveryNthStepOnTwoReplicas) {
  CompileConfig c = sgd_mse();
  c.optimizer.gradient_accumulation_steps = 2;
  Model m(dense_graph(), cpus(2), 1);
  m.compile(c);
  const std::vector<float> p0 = m.get_params();
  Data d1 = data(1), d2 = data(2);
  m.train_step(d1.batch());
  EXPECT_EQ(m.get_params(), p0) << "a step that accumulates must not move the weights";
  m.train_step(d2.batch());
  const std::vector<float> p2 = m.get_params();
  std::vector<double> gw1, gb1, gw2, gb2;
  gradient(p0, m.graph(), d1, gw1, gb1);
  gradient(p0, m.graph(), d2, gw2, gb2);
  const auto& prm = m.graph().params();
  for (int64_t i = 0; i < kIn * kOut; ++i)
    EXPECT_NEAR(p2[static_cast<size_t>(prm[0].offset + i)],
                p0[static_cast<size_t>(prm[0].offset + i)] - 0.5 * (gw1[i] + gw2[i]) / 2, 1e-6);
  for (int64_t j = 0; j < kOut; ++j)
    EXPECT_NEAR(p2[static_cast<size_t>(prm[1].offset + j)],
                p0[static_cast<size_t>(prm[1].offset + j)] - 0.5 * (gb1[j] + gb2[j]) / 2, 1e-6);
  EXPECT_EQ(m.iterations(), 2);
}

}  // namespace
}  // namespace mr
