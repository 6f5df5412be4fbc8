// Variable-length inputs (nn/graph.h: Graph::bind; train/step.h: Step::select):
// a model of per-time-step layers fed batches of lengths 7, 19 and 3 must
// train to the same weights, and log the same loss, as the same model built
// at each batch's fixed length; the graphs of the lengths share one
// workspace per replica, so nothing allocates once the longest has run.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "tests/graphs.h"
#include "train/model.h"

namespace mr {
namespace {

// ids (None, len) -> Embedding(10, 4) -> Dense(3, tanh): (None, len, 3);
// len < 0: a variable-length axis (batch_shape [null, null]).
std::shared_ptr<const Graph> per_step_model(int64_t len) {
  std::vector<GraphNode> nodes(3);
  Json bs = Json::array({nullptr, len < 0 ? Json(nullptr) : Json(len)});
  nodes[0].name = "ids";
  nodes[0].layer =
      make_layer("InputLayer", Json{{"batch_shape", bs}, {"name", "ids"}, {"dtype", "int32"}}, 0);
  nodes[1].name = "embedding";
  nodes[1].layer =
      make_layer("Embedding", Json{{"name", "embedding"}, {"input_dim", 10}, {"output_dim", 4}}, 7);
  nodes[1].inputs = {0};
  Initializer k;
  k.kind = Initializer::Kind::random_normal;
  k.b = 0.5;
  k.seed = 3;
  nodes[2].name = "dense";
  nodes[2].layer = make_dense(3, Activation::tanh, true, k, Initializer{});
  nodes[2].inputs = {1};
  return std::make_shared<const Graph>(std::move(nodes), std::vector<int>{0}, std::vector<int>{2});
}

CompileConfig sgd_mse() {
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::sgd;
  c.optimizer.learning_rate = 0.5;
  c.loss.kind = LossKind::mean_squared_error;
  MetricConfig mae;
  mae.kind = MetricKind::mean_absolute_error;
  mae.name = "mae";
  c.metrics.push_back(mae);
  return c;
}

struct Data {
  std::vector<float> x, y;
  HostBatch batch(int64_t rows, int64_t len) {
    HostBatch b;
    b.rows = rows;
    b.parts = {{x.data(), len}, {y.data(), len * 3}};
    return b;
  }
};

Data make_data(int64_t rows, int64_t len, int salt) {
  Data d;
  for (int64_t i = 0; i < rows * len; ++i) d.x.push_back(static_cast<float>((i * 7 + salt) % 10));
  for (int64_t i = 0; i < rows * len * 3; ++i)
    d.y.push_back(static_cast<float>(std::sin(0.37 * static_cast<double>(i + salt))));
  return d;
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << "element " << i;
}

TEST(VariableLength, GraphMarksTheAxesThatFollowTheLength) {
  const auto g = per_step_model(-1);
  EXPECT_TRUE(g->variable());
  EXPECT_EQ(g->variable_axis(0), 0);
  EXPECT_EQ(g->symbolic_out_shape(2), (Shape{-1, 3}));
  EXPECT_EQ(g->symbolic_out_shape(2).str_with_batch(), "(None, None, 3)");
  const auto b = g->bind({19});
  EXPECT_EQ(b->out_shape(2), (Shape{19, 3}));
  EXPECT_EQ(b->param_floats(), g->param_floats());
  EXPECT_FALSE(per_step_model(7)->variable());
}

TEST(VariableLength, BatchesOfSeveralLengthsTrainAsFixedLengthModels) {
  const int64_t rows = 5;
  const std::vector<int64_t> lengths{7, 19, 3};
  for (int replicas : {1, 2}) {
    SCOPED_TRACE(replicas);
    std::vector<DeviceSpec> devices{DeviceSpec{}};
    if (replicas == 2) devices.push_back(DeviceSpec{DeviceKind::cpu, 1});
    Model var(per_step_model(-1), devices, 1);
    var.compile(sgd_mse());
    std::vector<float> params = var.get_params();
    double weighted_loss = 0.0;  // Keras: batch means weighted by their samples
    int64_t allocations_after_longest = -1;
    for (size_t i = 0; i < lengths.size(); ++i) {
      const int64_t len = lengths[i];
      Data d = make_data(rows, len, static_cast<int>(i));
      Model fixed(per_step_model(len), {DeviceSpec{}}, 1, 300.0, false);
      fixed.compile(sgd_mse());
      fixed.set_params(params);
      fixed.train_step(d.batch(rows, len));
      const double batch_loss = fixed.read_metrics()[0];
      weighted_loss += batch_loss * rows;
      if (len == 3) allocations_after_longest = var.replica_backend(0).system_allocations();
      var.train_step(d.batch(rows, len));
      if (len == 3)
        EXPECT_EQ(var.replica_backend(0).system_allocations(), allocations_after_longest)
            << "a shorter length allocated after the longest ran";
      EXPECT_EQ(var.output_shape(0), (Shape{len, 3}));
      params = fixed.get_params();
      expect_near(var.get_params(), params, 1e-6);
    }
    EXPECT_EQ(var.graph_variants(), 4u);  // the three lengths and the declared graph
    const std::vector<double> logs = var.read_metrics();
    EXPECT_NEAR(logs[0], weighted_loss / static_cast<double>(rows * 3), 1e-6);
  }
}

TEST(VariableLength, PredictionFollowsEachBatchsLength) {
  Model var(per_step_model(-1), {DeviceSpec{}}, 1);
  Model fixed(per_step_model(4), {DeviceSpec{}}, 1, 300.0, false);
  fixed.set_params(var.get_params());
  Data d = make_data(3, 4, 1);
  HostBatch b = d.batch(3, 4);
  b.parts.resize(1);
  std::vector<float> a(3 * 4 * 3), e(3 * 4 * 3);
  var.predict_step(b, 0, a.data());
  fixed.predict_step(b, 0, e.data());
  expect_near(a, e, 0.0);
}

TEST(VariableLength, WidthsThatAreNoLengthAndLengthDependentWeightsAreErrors) {
  // A Dense after a variable axis flattened: its kernel would follow the length.
  std::vector<GraphNode> nodes(3);
  nodes[0].name = "x";
  nodes[0].layer =
      make_layer("InputLayer", Json{{"batch_shape", {nullptr, nullptr, 2}}, {"name", "x"}}, 0);
  nodes[1].name = "flatten";
  nodes[1].layer = make_flatten();
  nodes[1].inputs = {0};
  nodes[2].name = "dense";
  nodes[2].layer = make_dense(1, Activation::linear, true, Initializer{}, Initializer{});
  nodes[2].inputs = {1};
  try {
    Graph g(std::move(nodes), {0}, {2});
    FAIL() << "expected a shape error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::shape);
    EXPECT_NE(std::string(e.what()).find("layer 'dense'"), std::string::npos) << e.what();
  }
  // Two variable axes in one input.
  std::vector<GraphNode> two(1);
  two[0].name = "img";
  two[0].layer = make_layer("InputLayer",
                            Json{{"batch_shape", {nullptr, nullptr, nullptr}}, {"name", "img"}}, 0);
  EXPECT_THROW(Graph(std::move(two), {0}, {0}), Error);
  // An input of (None, None, 2) given 5 floats per sample.
  std::vector<GraphNode> one(2);
  one[0].name = "x";
  one[0].layer =
      make_layer("InputLayer", Json{{"batch_shape", {nullptr, nullptr, 2}}, {"name", "x"}}, 0);
  one[1].name = "dense";
  one[1].layer = make_dense(1, Activation::linear, true, Initializer{}, Initializer{});
  one[1].inputs = {0};
  Model m(std::make_shared<const Graph>(std::move(one), std::vector<int>{0}, std::vector<int>{1}),
          {DeviceSpec{}}, 1);
  std::vector<float> x(10, 1.0f), out(10);
  HostBatch b;
  b.rows = 2;
  b.parts = {{x.data(), 5}};
  try {
    m.predict_step(b, 0, out.data());
    FAIL() << "expected a shape error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::shape);
    EXPECT_NE(std::string(e.what()).find("(None, None, 2)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mr
