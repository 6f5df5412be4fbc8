// Gradients of every layer, through the graph executor, against central
// finite differences of the loss computed by forward passes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"
#include "nn/executor.h"
#include "nn/graph.h"
#include "tests/graphs.h"

namespace mr {
namespace {

Initializer small_normal(uint64_t seed) {
  Initializer i;
  i.kind = Initializer::Kind::random_normal;
  i.b = 0.3;
  i.seed = seed;
  return i;
}

struct Case {
  const char* name;
  std::vector<GraphNode> (*build)();
  LossKind loss;
  bool from_logits;
  int64_t out_cols;
};

// Loss of the whole batch (sum of per-sample losses / rows) and, when
// `grads` is given, the analytic gradients of the flat parameters.
double run(const Graph& g, Backend& be, const std::vector<float>& params,
           const std::vector<float>& x, const std::vector<float>& t, int64_t rows, LossKind kind,
           bool logits, std::vector<float>* grads) {
  Executor ex(g, be);
  ex.reserve(rows);
  const int64_t in_w = g.out_shape(g.inputs()[0]).numel();
  be.upload(ex.input(0), x.data(), static_cast<size_t>(rows * in_w) * sizeof(float));
  ex.forward(test_pass(rows, 7, params.data()));
  const int64_t cols = g.out_shape(g.outputs()[0]).numel();
  double acc = 0;
  be.loss(kind, LossParams{logits}, rows, cols, ex.output(0), t.data(), nullptr,
          1.0f / static_cast<float>(rows), grads ? ex.output_grad(0) : nullptr, &acc);
  if (grads) {
    grads->assign(params.size(), 0.0f);
    ex.backward(test_pass(rows, 0, params.data()), grads->data());
  }
  return acc / static_cast<double>(rows);
}

void check_gradients(const Graph& g, LossKind kind, bool logits, const std::vector<float>& t,
                     int64_t rows) {
  CpuBackend be(0, 1);
  std::vector<float> params = g.initial_params();
  std::vector<float> x(static_cast<size_t>(rows * g.out_shape(g.inputs()[0]).numel()));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i) + 0.3));
  std::vector<float> grads;
  run(g, be, params, x, t, rows, kind, logits, &grads);
  int checked = 0;
  for (const Graph::Param& p : g.params()) {
    for (int64_t i = 0; i < p.size; i += std::max<int64_t>(1, p.size / 7)) {
      const size_t at = static_cast<size_t>(p.offset + i);
      const float saved = params[at];
      const float h = 1e-2f;
      params[at] = saved + h;
      const double up = run(g, be, params, x, t, rows, kind, logits, nullptr);
      params[at] = saved - h;
      const double down = run(g, be, params, x, t, rows, kind, logits, nullptr);
      params[at] = saved;
      const double fd = (up - down) / (2.0 * h);
      EXPECT_NEAR(grads[at], fd, 2e-3 + 2e-2 * std::fabs(fd))
          << g.node(p.node).name << "/" << p.name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 4);
}

TEST(LayerGradients, DenseChainWithEveryActivation) {
  for (Activation act : {Activation::linear, Activation::sigmoid, Activation::tanh,
                         Activation::gelu, Activation::softmax}) {
    std::vector<std::unique_ptr<Layer>> l;
    l.push_back(make_input_layer(Shape{5}));
    l.push_back(make_dense(4, act, true, small_normal(1), small_normal(2)));
    l.push_back(make_dense(3, Activation::linear, true, glorot_uniform(3), small_normal(4)));
    Graph g(chain_nodes(std::move(l)), {0}, {2});
    check_gradients(g, LossKind::sparse_categorical_crossentropy, true, {0, 2, 1, 1}, 4);
  }
}

TEST(LayerGradients, ReluAwayFromTheKink) {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{6}));
  l.push_back(make_dense(5, Activation::relu, true, glorot_uniform(5), small_normal(6)));
  l.push_back(make_dense(2, Activation::linear, false, glorot_uniform(7), Initializer{}));
  Graph g(chain_nodes(std::move(l)), {0}, {2});
  check_gradients(g, LossKind::mean_squared_error, false, {0.5f, -1, 2, 0.25f, -0.5f, 1}, 3);
}

TEST(LayerGradients, DropoutActivationFlattenAndSoftmaxOutput) {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{2, 3}));
  l.push_back(make_flatten());
  l.push_back(make_dense(6, Activation::linear, true, glorot_uniform(8), small_normal(9)));
  l.push_back(make_activation(Activation::tanh));
  l.push_back(make_dropout(0.4, 11));
  l.push_back(make_dense(3, Activation::softmax, true, glorot_uniform(10), small_normal(12)));
  Graph g(chain_nodes(std::move(l)), {0}, {5});
  check_gradients(g, LossKind::categorical_crossentropy, false,
                  {1, 0, 0, 0, 0, 1, 0, 1, 0, 0.2f, 0.3f, 0.5f}, 4);
}

TEST(LayerGradients, BinaryCrossentropyOnSigmoidOutput) {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{4}));
  l.push_back(make_dense(3, Activation::sigmoid, true, glorot_uniform(13), small_normal(14)));
  Graph g(chain_nodes(std::move(l)), {0}, {1});
  check_gradients(g, LossKind::binary_crossentropy, false, {1, 0, 1, 0, 0, 1, 1, 1, 0}, 3);
}

// A node read by two consumers (two model outputs here) must receive the sum
// of both consumers' gradients.
double two_output_loss(const Graph& g, Backend& be, const std::vector<float>& params,
                       const std::vector<float>& x, int64_t rows, std::vector<float>* grads) {
  Executor ex(g, be);
  ex.reserve(rows);
  be.upload(ex.input(0), x.data(), x.size() * sizeof(float));
  ex.forward(test_pass(rows, 0, params.data()));
  double acc = 0;
  const std::vector<float> t0(static_cast<size_t>(rows * 2), 0.5f),
      t1(static_cast<size_t>(rows * 4), -0.25f);
  be.loss(LossKind::mean_squared_error, LossParams{}, rows, 2, ex.output(0), t0.data(), nullptr,
          1.0f, grads ? ex.output_grad(0) : nullptr, &acc);
  be.loss(LossKind::mean_squared_error, LossParams{}, rows, 4, ex.output(1), t1.data(), nullptr,
          1.0f, grads ? ex.output_grad(1) : nullptr, &acc);
  if (grads) {
    grads->assign(params.size(), 0.0f);
    ex.backward(test_pass(rows, 0, params.data()), grads->data());
  }
  return acc;
}

TEST(LayerGradients, FanOutAccumulatesBothConsumers) {
  std::vector<GraphNode> nodes;
  auto add = [&](std::unique_ptr<Layer> layer, std::vector<int> in) {
    GraphNode n;
    n.name = "n" + std::to_string(nodes.size());
    n.layer = std::move(layer);
    n.inputs = std::move(in);
    nodes.push_back(std::move(n));
  };
  add(make_input_layer(Shape{3}), {});
  add(make_dense(4, Activation::tanh, true, glorot_uniform(1), small_normal(2)), {0});
  add(make_activation(Activation::sigmoid), {1});
  add(make_activation(Activation::tanh), {1});
  add(make_dense(2, Activation::linear, true, glorot_uniform(3), small_normal(4)), {2});
  Graph g(std::move(nodes), {0}, {4, 3});
  EXPECT_EQ(g.consumers(1), 2);
  CpuBackend be(0, 1);
  std::vector<float> params = g.initial_params();
  const std::vector<float> x{0.1f, -0.4f, 0.8f, 0.3f, 0.2f, -0.9f};
  std::vector<float> grads;
  two_output_loss(g, be, params, x, 2, &grads);
  for (const Graph::Param& p : g.params()) {
    for (int64_t i = 0; i < p.size; ++i) {
      const size_t at = static_cast<size_t>(p.offset + i);
      const float saved = params[at];
      params[at] = saved + 1e-2f;
      const double up = two_output_loss(g, be, params, x, 2, nullptr);
      params[at] = saved - 1e-2f;
      const double down = two_output_loss(g, be, params, x, 2, nullptr);
      params[at] = saved;
      const double fd = (up - down) / 2e-2;
      EXPECT_NEAR(grads[at], fd, 2e-3 + 2e-2 * std::fabs(fd)) << p.name << "[" << i << "]";
    }
  }
}

TEST(Graph, ParamLayoutIsAlignedAndInKerasOrder) {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{784}));
  l.push_back(make_dense(256, Activation::relu, true, glorot_uniform(1), Initializer{}));
  l.push_back(make_dense(256, Activation::relu, true, glorot_uniform(2), Initializer{}));
  l.push_back(make_dense(10, Activation::linear, true, glorot_uniform(3), Initializer{}));
  Graph g(chain_nodes(std::move(l)), {0}, {3});
  ASSERT_EQ(g.params().size(), 6u);
  EXPECT_EQ(g.param_count(), 269322);
  EXPECT_EQ(g.params()[0].shape, (Shape{784, 256}));
  EXPECT_EQ(g.params()[1].shape, (Shape{256}));
  for (const auto& p : g.params()) EXPECT_EQ(p.offset % kParamAlign, 0);
  // Glorot uniform: within the limit, mean near 0, and biases zero.
  const std::vector<float> init = g.initial_params();
  const double limit = std::sqrt(6.0 / (784 + 256));
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < g.params()[0].size; ++i) {
    const float v = init[static_cast<size_t>(i)];
    ASSERT_LE(std::fabs(v), limit);
    sum += v;
    sq += double{v} * v;
  }
  const double n = static_cast<double>(g.params()[0].size);
  EXPECT_NEAR(sum / n, 0.0, 0.01 * limit);
  EXPECT_NEAR(sq / n, limit * limit / 3.0, 0.02 * limit * limit / 3.0);
  for (int64_t i = 0; i < 256; ++i)
    EXPECT_EQ(init[static_cast<size_t>(g.params()[1].offset + i)], 0.0f);
}

TEST(Graph, RejectsCyclesAndBadShapes) {
  std::vector<GraphNode> nodes;
  GraphNode in;
  in.name = "in";
  in.layer = make_input_layer(Shape{3});
  nodes.push_back(std::move(in));
  GraphNode d;
  d.name = "d";
  d.layer = make_dense(2, Activation::linear, true, glorot_uniform(1), Initializer{});
  d.inputs = {1};  // itself
  nodes.push_back(std::move(d));
  EXPECT_THROW(Graph(std::move(nodes), {0}, {1}), Error);
  EXPECT_THROW(make_dense(0, Activation::linear, true, glorot_uniform(1), Initializer{}), Error);
  EXPECT_THROW(make_dropout(1.0, 1), Error);
  EXPECT_THROW(activation_from_name("swishy"), Error);
}

TEST(Initializers, HeNormalIsTruncatedWithKerasScale) {
  Initializer he;
  he.kind = Initializer::Kind::he_normal;
  he.seed = 5;
  std::vector<float> v;
  initialize(he, Shape{400, 300}, 0, v);
  const double sd = std::sqrt(2.0 / 400);
  double sq = 0;
  for (float x : v) {
    ASSERT_LE(std::fabs(x), 2.0 * sd / 0.87962566103423978 + 1e-6);
    sq += double{x} * x;
  }
  EXPECT_NEAR(std::sqrt(sq / static_cast<double>(v.size())), sd, 0.02 * sd);
  std::vector<float> again;
  initialize(he, Shape{400, 300}, 0, again);
  EXPECT_EQ(v, again);
  he.seed = 6;
  initialize(he, Shape{400, 300}, 0, again);
  EXPECT_NE(v, again);
}

}  // namespace
}  // namespace mr
