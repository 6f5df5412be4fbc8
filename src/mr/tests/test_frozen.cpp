// Frozen layers: the per-node flags compile() receives become per-variable
// flags (a shared layer follows its owner), frozen variables drop out of
// Keras' optimizer-variable order, and a training step leaves a frozen
// Dense and a frozen BatchNormalization (parameters and moving statistics)
// bit-identical while the rest takes SGD's step, computed here in double
// with the BatchNormalization in inference mode — on 1 and 2 replicas.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "tests/graphs.h"
#include "train/frozen.h"
#include "train/model.h"
#include "train/model_weights.h"

namespace mr {
namespace {

// input(3) -> dense(4, linear) -> BatchNormalization -> dense(2, linear)
std::shared_ptr<const Graph> dense_bn_dense() {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{3}));
  l.push_back(make_dense(4, Activation::linear, true, glorot_uniform(1), Initializer{}));
  l.push_back(make_layer("BatchNormalization", Json{{"name", "bn"}, {"momentum", 0.5}}, 0));
  l.push_back(make_dense(2, Activation::linear, true, glorot_uniform(2), Initializer{}));
  return chain(std::move(l));
}

TEST(Frozen, NodeFlagsBecomeVariableFlags) {
  auto g = dense_bn_dense();
  ASSERT_EQ(g->params().size(), 6u);  // kernel, bias, gamma, beta, kernel, bias
  CompileConfig c;
  c.frozen = {0, 0, 1, 0};
  resolve_frozen(*g, c);
  EXPECT_EQ(c.trainable, (std::vector<char>{1, 1, 0, 0, 1, 1}));
  CompileConfig none;
  none.frozen = {0, 0, 0, 0};
  resolve_frozen(*g, none);
  EXPECT_TRUE(none.frozen.empty());
  EXPECT_TRUE(none.trainable.empty());
  CompileConfig bad;
  bad.frozen = {1};
  EXPECT_THROW(resolve_frozen(*g, bad), Error);
}

TEST(Frozen, SharedLayerFollowsItsOwner) {
  // input(2) -> dense(2) -> the same dense again.
  std::vector<GraphNode> nodes(3);
  nodes[0].name = "in";
  nodes[0].layer = make_input_layer(Shape{2});
  nodes[1].name = "d";
  nodes[1].layer = make_dense(2, Activation::linear, true, glorot_uniform(3), Initializer{});
  nodes[1].inputs = {0};
  nodes[2].name = "d";
  nodes[2].shares = 1;
  nodes[2].inputs = {1};
  Graph g(std::move(nodes), {0}, {2});
  CompileConfig c;
  c.frozen = {0, 1, 0};
  resolve_frozen(g, c);
  EXPECT_EQ(c.frozen, (std::vector<char>{0, 1, 1}));
  EXPECT_EQ(c.trainable, (std::vector<char>{0, 0}));
}

TEST(Frozen, OptimizerVariablesOfTrainableVariablesOnly) {
  OptimizerConfig adam;
  adam.kind = OptimizerConfig::Kind::adam;
  // Adam: (m, v) per variable; variable 1 frozen.
  auto order = keras_slot_order(adam, 3, {1, 0, 1});
  const std::vector<std::pair<int, int>> want{{0, 0}, {1, 0}, {0, 2}, {1, 2}};
  EXPECT_EQ(order, want);
  EXPECT_EQ(keras_slot_order(adam, 3, {}).size(), 6u);
  // The flags as compile() derives them from frozen nodes.
  auto g = dense_bn_dense();
  CompileConfig c;
  c.frozen = {0, 1, 0, 0};
  resolve_frozen(*g, c);
  EXPECT_EQ(keras_slot_order(adam, 6, c.trainable).size(), 8u);
}

void frozen_step_on(int replicas) {
  SCOPED_TRACE(replicas);
  const int64_t rows = 6;
  std::vector<DeviceSpec> devs;
  for (int i = 0; i < replicas; ++i) devs.push_back(DeviceSpec{DeviceKind::cpu, i});
  Model m(dense_bn_dense(), devs, 1);
  // Moving statistics away from (0, 1), so that training mode would show.
  std::vector<float> state = m.get_state();
  const auto& st = m.graph().states();
  for (int64_t c = 0; c < 4; ++c) {
    state[static_cast<size_t>(st[0].offset + c)] = 0.3f * static_cast<float>(c) - 0.2f;
    state[static_cast<size_t>(st[1].offset + c)] = 0.5f + 0.4f * static_cast<float>(c);
  }
  m.set_state(state);
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::sgd;
  c.optimizer.learning_rate = 0.1;
  c.loss.kind = LossKind::mean_squared_error;
  c.frozen = {0, 1, 1, 0};  // the first dense and the BatchNormalization
  m.compile(c);
  const std::vector<float> p0 = m.get_params(), s0 = m.get_state();
  const auto& prm = m.graph().params();
  std::vector<float> x(rows * 3), y(rows * 2);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.9 * double(i) + 0.3));
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(std::cos(1.7 * double(i)));
  HostBatch b;
  b.rows = rows;
  b.parts = {{x.data(), 3}, {y.data(), 2}};
  m.train_step(b);
  const std::vector<float> p1 = m.get_params(), s1 = m.get_state();
  for (int k = 0; k < 4; ++k)  // dense 1 and gamma, beta: untouched
    for (int64_t i = 0; i < prm[k].size; ++i)
      EXPECT_EQ(p1[prm[k].offset + i], p0[prm[k].offset + i]) << "param " << k << " " << i;
  EXPECT_EQ(s1, s0);  // moving statistics kept
  // Reference: h = BN_inference(x W1 + b1); out = h W2 + b2; MSE over the
  // batch (mean of rows * 2 squared errors).
  const double eps = 1e-3;
  std::vector<double> gw(8, 0.0), gb(2, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double h[4];
    for (int64_t j = 0; j < 4; ++j) {
      double z = p0[prm[1].offset + j];
      for (int64_t k = 0; k < 3; ++k) z += double{x[r * 3 + k]} * p0[prm[0].offset + k * 4 + j];
      const double mean = s0[st[0].offset + j], var = s0[st[1].offset + j];
      h[j] = (z - mean) / std::sqrt(var + eps) * p0[prm[2].offset + j] + p0[prm[3].offset + j];
    }
    for (int64_t o = 0; o < 2; ++o) {
      double out = p0[prm[5].offset + o];
      for (int64_t j = 0; j < 4; ++j) out += h[j] * p0[prm[4].offset + j * 2 + o];
      const double d = 2.0 * (out - y[r * 2 + o]) / static_cast<double>(rows * 2);
      gb[o] += d;
      for (int64_t j = 0; j < 4; ++j) gw[j * 2 + o] += h[j] * d;
    }
  }
  for (int64_t i = 0; i < 8; ++i)
    EXPECT_NEAR(p1[prm[4].offset + i], p0[prm[4].offset + i] - 0.1 * gw[i], 1e-6) << "kernel " << i;
  for (int64_t o = 0; o < 2; ++o)
    EXPECT_NEAR(p1[prm[5].offset + o], p0[prm[5].offset + o] - 0.1 * gb[o], 1e-6) << "bias " << o;
}

TEST(Frozen, StepLeavesFrozenLayersAndMovingStatisticsAlone) {
  frozen_step_on(1);
  frozen_step_on(2);
}

}  // namespace
}  // namespace mr
