// Merge layers inside a graph whose tensors feed several merges (and one
// merge twice): the executor accumulates every input's gradient through its
// own scratch slot. Parameter gradients against central differences of the
// loss.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "tests/graphs.h"

namespace mr {
namespace {

Initializer normal(uint64_t seed) {
  Initializer i;
  i.kind = Initializer::Kind::random_normal;
  i.b = 0.5;
  i.seed = seed;
  return i;
}

GraphNode node(const char* name, std::unique_ptr<Layer> l, std::vector<int> in) {
  return GraphNode{name, std::move(l), std::move(in)};
}

std::unique_ptr<Layer> merge(const char* cls) { return make_layer(cls, Json{{"name", cls}}, 0); }

// MSE of the batch and, with `grads`, the parameters' gradients.
double loss(const Graph& g, Backend& be, const std::vector<float>& params,
            const std::vector<float>& x, const std::vector<float>& t, int64_t rows,
            std::vector<float>* grads) {
  Executor ex(g, be);
  ex.reserve(rows);
  be.upload(ex.input(0), x.data(), x.size() * sizeof(float));
  ex.forward(test_pass(rows, 1, params.data()));
  double acc = 0;
  be.loss(LossKind::mean_squared_error, LossParams{}, rows, 2, ex.output(0), t.data(), nullptr,
          1.0f / static_cast<float>(rows), grads ? ex.output_grad(0) : nullptr, &acc);
  if (grads) {
    grads->assign(params.size(), 0.0f);
    ex.backward(test_pass(rows, 1, params.data()), grads->data());
  }
  return acc / static_cast<double>(rows);
}

TEST(MergeGraph, TensorsFeedingSeveralMergesGetEveryGradient) {
  std::vector<GraphNode> n;
  n.push_back(node("in", make_input_layer(Shape{4}), {}));                                     // 0
  n.push_back(node("a", make_dense(3, Activation::tanh, true, normal(1), normal(2)), {0}));    // 1
  n.push_back(node("b", make_dense(3, Activation::linear, true, normal(3), normal(4)), {0}));  // 2
  n.push_back(node("sub", merge("Subtract"), {1, 2}));                                         // 3
  n.push_back(node("max", merge("Maximum"), {1, 2}));                                          // 4
  n.push_back(node("sq", merge("Multiply"), {1, 1}));                                          // 5
  n.push_back(node("avg", merge("Average"), {2, 1, 2}));                                       // 6
  n.push_back(node("cat", merge("Concatenate"), {3, 4, 5, 6}));                                // 7
  n.push_back(node("out", make_dense(2, Activation::linear, true, normal(5), normal(6)), {7}));
  Graph g(std::move(n), {0}, {8});
  CpuBackend be(0, 1);
  const int64_t rows = 5;
  std::vector<float> x(rows * 4), t(rows * 2);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.9 * i + 0.2));
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<float>(std::cos(1.3 * i));
  std::vector<float> params = g.initial_params(), grads;
  loss(g, be, params, x, t, rows, &grads);
  int checked = 0;
  for (const Graph::Param& p : g.params())
    for (int64_t i = 0; i < p.size; ++i) {
      const size_t at = static_cast<size_t>(p.offset + i);
      const float saved = params[at];
      const float h = 1e-3f;
      params[at] = saved + h;
      const double up = loss(g, be, params, x, t, rows, nullptr);
      params[at] = saved - h;
      const double down = loss(g, be, params, x, t, rows, nullptr);
      params[at] = saved;
      const double fd = (up - down) / (2.0 * h);
      EXPECT_NEAR(grads[at], fd, 1e-3 + 1e-2 * std::fabs(fd))
          << g.node(p.node).name << "/" << p.name << "[" << i << "]";
      ++checked;
    }
  EXPECT_GT(checked, 40);
}

}  // namespace
}  // namespace mr
