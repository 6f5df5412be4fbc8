// Graphs of the functional API in the core: a shared layer (one set of
// variables, gradients summed over its calls) against finite differences of
// a double-precision reference, and a model of two outputs whose total loss
// is the weighted sum of its outputs' losses.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
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

// input(3) -> D -> D (the same Dense, 3 -> 3, tanh) -> output.
std::shared_ptr<const Graph> shared_dense_twice() {
  std::vector<GraphNode> nodes(3);
  nodes[0].name = "input_layer";
  nodes[0].layer = make_input_layer(Shape{3});
  nodes[1].name = "dense";
  nodes[1].layer = make_dense(3, Activation::tanh, true, normal(1, 0.6), normal(2, 0.3));
  nodes[1].inputs = {0};
  nodes[2].name = "dense";
  nodes[2].shares = 1;
  nodes[2].inputs = {1};
  return std::make_shared<const Graph>(std::move(nodes), std::vector<int>{0}, std::vector<int>{2});
}

// Mean squared error of D(D(x)) against y, in double precision; w = kernel
// (3 x 3, row-major, in x out) then bias.
double shared_loss(const std::vector<double>& w, const std::vector<float>& x,
                   const std::vector<float>& y, int64_t rows) {
  double loss = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double h[3], o[3];
    for (int j = 0; j < 3; ++j) {
      h[j] = w[9 + j];
      for (int k = 0; k < 3; ++k) h[j] += double{x[r * 3 + k]} * w[k * 3 + j];
      h[j] = std::tanh(h[j]);
    }
    for (int j = 0; j < 3; ++j) {
      o[j] = w[9 + j];
      for (int k = 0; k < 3; ++k) o[j] += h[k] * w[k * 3 + j];
      o[j] = std::tanh(o[j]);
      const double d = o[j] - y[r * 3 + j];
      loss += d * d / 3.0;
    }
  }
  return loss / static_cast<double>(rows);
}

TEST(Functional, SharedLayerHasOneSetOfVariablesAndSummedGradients) {
  auto graph = shared_dense_twice();
  ASSERT_EQ(graph->params().size(), 2u);  // kernel and bias, once
  EXPECT_TRUE(graph->node_weights(2).empty());
  EXPECT_EQ(graph->node_params(2), graph->node_params(1));
  const int64_t rows = 5;
  std::vector<float> x(rows * 3), y(rows * 3);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i) + 0.2));
    y[i] = static_cast<float>(0.5 * std::cos(1.1 * static_cast<double>(i)));
  }
  for (int replicas : {1, 2}) {
    std::vector<DeviceSpec> devs;
    for (int r = 0; r < replicas; ++r) devs.push_back(parse_device("/cpu:" + std::to_string(r)));
    Model m(graph, devs, 1);
    CompileConfig c;
    c.optimizer.kind = OptimizerConfig::Kind::sgd;
    c.optimizer.learning_rate = 1.0;
    c.loss.kind = LossKind::mean_squared_error;
    m.compile(c);
    const std::vector<float> p0 = m.get_params();
    HostBatch b;
    b.rows = rows;
    b.parts = {{x.data(), 3}, {y.data(), 3}};
    m.train_step(b);
    const std::vector<float> p1 = m.get_params();
    const auto& prm = m.graph().params();
    std::vector<double> w;
    for (const auto& p : prm)
      for (int64_t k = 0; k < p.size; ++k) w.push_back(p0[static_cast<size_t>(p.offset + k)]);
    size_t at = 0;
    for (const auto& p : prm) {
      for (int64_t k = 0; k < p.size; ++k, ++at) {
        const double h = 1e-6;
        std::vector<double> wp = w, wm = w;
        wp[at] += h;
        wm[at] -= h;
        const double fd = (shared_loss(wp, x, y, rows) - shared_loss(wm, x, y, rows)) / (2 * h);
        const double got = double{p0[static_cast<size_t>(p.offset + k)]} -
                           double{p1[static_cast<size_t>(p.offset + k)]};
        EXPECT_NEAR(got, fd, 1e-5 + 1e-4 * std::fabs(fd))
            << p.name << "[" << k << "] with " << replicas << " replica(s)";
      }
    }
  }
}

TEST(Functional, SharedLayerOnIncompatibleShapesIsAShapeError) {
  std::vector<GraphNode> nodes(4);
  nodes[0].name = "a";
  nodes[0].layer = make_input_layer(Shape{3});
  nodes[1].name = "b";
  nodes[1].layer = make_input_layer(Shape{4});
  nodes[2].name = "dense";
  nodes[2].layer = make_dense(2, Activation::linear, true, normal(1, 0.5), normal(2, 0.1));
  nodes[2].inputs = {0};
  nodes[3].name = "dense";
  nodes[3].shares = 2;
  nodes[3].inputs = {1};
  try {
    Graph g(std::move(nodes), {0, 1}, {2, 3});
    FAIL() << "expected a shape error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::shape);
    EXPECT_NE(std::string(e.what()).find("dense"), std::string::npos);
  }
}

TEST(Functional, TwoOutputLossIsTheWeightedSumOfTheOutputsLosses) {
  std::vector<GraphNode> nodes(3);
  nodes[0].name = "input_layer";
  nodes[0].layer = make_input_layer(Shape{3});
  nodes[1].name = "reg";
  nodes[1].layer = make_dense(2, Activation::linear, true, normal(3, 0.5), normal(4, 0.1));
  nodes[1].inputs = {0};
  nodes[2].name = "cls";
  nodes[2].layer = make_dense(3, Activation::linear, true, normal(5, 0.5), normal(6, 0.1));
  nodes[2].inputs = {0};
  auto graph =
      std::make_shared<const Graph>(std::move(nodes), std::vector<int>{0}, std::vector<int>{1, 2});
  Model m(graph, {DeviceSpec{}}, 1);
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::sgd;
  OutputConfig reg, cls;
  reg.loss.kind = LossKind::mean_squared_error;
  reg.weight = 0.5f;
  reg.name = "reg";
  MetricConfig mae;
  mae.kind = MetricKind::mean_absolute_error;
  mae.name = "mae";
  reg.metrics.push_back(mae);
  cls.loss.kind = LossKind::sparse_categorical_crossentropy;
  cls.loss.from_logits = true;
  cls.weight = 2.0f;
  cls.name = "cls";
  cls.metrics.push_back(MetricConfig{});
  cls.metrics.back().name = "accuracy";
  c.outputs = {reg, cls};
  m.compile(c);
  EXPECT_EQ(m.metric_names(),
            (std::vector<std::string>{"cls_accuracy", "cls_loss", "loss", "reg_loss", "reg_mae"}));
  const int64_t rows = 6;
  std::vector<float> x(rows * 3), yr(rows * 2), yc{0, 2, 1, 1, 0, 2};
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::cos(0.9 * i));
  for (size_t i = 0; i < yr.size(); ++i) yr[i] = static_cast<float>(std::sin(1.7 * i));
  HostBatch b;
  b.rows = rows;
  b.parts = {{x.data(), 3}, {yr.data(), 2}, {yc.data(), 1}};
  std::vector<float> o1(rows * 2), o2(rows * 3);
  m.predict_step(b, {o1.data(), o2.data()});
  double l_reg = 0, l_cls = 0, mae_sum = 0, correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int j = 0; j < 2; ++j) {
      const double d = double{o1[r * 2 + j]} - yr[r * 2 + j];
      l_reg += d * d / 2.0;
      mae_sum += std::fabs(d) / 2.0;
    }
    double mx = o2[r * 3], s = 0;
    int arg = 0;
    for (int j = 1; j < 3; ++j) {
      if (o2[r * 3 + j] > mx) {
        mx = o2[r * 3 + j];
        arg = j;
      }
    }
    for (int j = 0; j < 3; ++j) s += std::exp(o2[r * 3 + j] - mx);
    l_cls += mx + std::log(s) - o2[r * 3 + static_cast<int>(yc[r])];
    correct += arg == static_cast<int>(yc[r]) ? 1 : 0;
  }
  l_reg /= rows;
  l_cls /= rows;
  m.reset_metrics();
  m.start_eval_step(b);
  m.finish_step();
  const std::vector<double> got = m.read_metrics();
  EXPECT_NEAR(got[0], correct / rows, 1e-6);
  EXPECT_NEAR(got[1], l_cls, 1e-5);
  EXPECT_NEAR(got[2], 0.5 * l_reg + 2.0 * l_cls, 1e-5);
  EXPECT_NEAR(got[3], l_reg, 1e-5);
  EXPECT_NEAR(got[4], mae_sum / rows, 1e-5);
  // A loss list that does not match the outputs.
  CompileConfig bad = c;
  bad.outputs.pop_back();
  EXPECT_THROW(m.compile(bad), Error);
}

}  // namespace
}  // namespace mr
