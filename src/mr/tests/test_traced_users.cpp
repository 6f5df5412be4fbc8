// Traced graphs in the training step (issue 15, docs/traced-graphs.md §5):
// traced losses, metrics and layers give the built-in losses', metrics' and
// Dense's numbers (losses and weights within a relative difference of 1e-6)
// on 1 and 2 CPU replicas, the errors name what is wrong, steps allocate
// nothing, and Backend::traced_reduce matches a double reference on the CPU
// and the CPU on a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "core/error.h"
#include "core/json.h"
#include "nn/layers/registry.h"
#include "nn/traced_graph.h"
#include "tests/graphs.h"
#include "tests/test_util.h"
#include "train/model.h"

namespace mr {
namespace {

using Vec = std::vector<float>;

std::shared_ptr<const TracedGraph> traced(const std::string& text) {
  return std::make_shared<const TracedGraph>(parse_json(text, "test graph"));
}

// mean(square(y_pred - y_true), axis = -1): Keras' mean_squared_error.
const char* kMse = R"({"inputs": [{"shape": [null, 3]}, {"shape": [null, 3]}],
  "nodes": [{"op": "subtract", "in": [["input", 1], ["input", 0]]},
            {"op": "square", "in": [["node", 0]]},
            {"op": "mean", "in": [["node", 1]], "attrs": {"axis": -1}}],
  "outputs": [["node", 2]]})";
// The same over every axis: one value, the batch mean.
const char* kMseScalar = R"({"inputs": [{"shape": [null, 3]}, {"shape": [null, 3]}],
  "nodes": [{"op": "subtract", "in": [["input", 1], ["input", 0]]},
            {"op": "square", "in": [["node", 0]]},
            {"op": "mean", "in": [["node", 1]]}],
  "outputs": [["node", 2]]})";
// -sum(y_true * log_softmax(y_pred), axis = -1).
const char* kCce = R"({"inputs": [{"shape": [null, 3]}, {"shape": [null, 3]}],
  "nodes": [{"op": "log_softmax", "in": [["input", 1]], "attrs": {"axis": -1}},
            {"op": "multiply", "in": [["input", 0], ["node", 0]]},
            {"op": "sum", "in": [["node", 1]], "attrs": {"axis": -1}},
            {"op": "negative", "in": [["node", 2]]}],
  "outputs": [["node", 3]]})";
// mean(abs(y_true - y_pred), axis = -1): Keras' mean_absolute_error.
const char* kMae = R"({"inputs": [{"shape": [null, 3]}, {"shape": [null, 3]}],
  "nodes": [{"op": "subtract", "in": [["input", 0], ["input", 1]]},
            {"op": "abs", "in": [["node", 0]]},
            {"op": "mean", "in": [["node", 1]], "attrs": {"axis": -1}}],
  "outputs": [["node", 2]]})";
// relu(x %*% w + b), w glorot_uniform and b zeros: Dense(3, relu) on 4 inputs.
const char* kDenseGraph = R"({"inputs": [{"shape": [null, 4]}],
  "weights": [{"name": "w", "shape": [4, 3], "initializer": "glorot_uniform", "trainable": true},
              {"name": "b", "shape": [3], "initializer": "zeros", "trainable": true}],
  "nodes": [{"op": "matmul", "in": [["input", 0], ["weight", 0]]},
            {"op": "add", "in": [["node", 0], ["weight", 1]]},
            {"op": "relu", "in": [["node", 1]]}],
  "outputs": [["node", 2]]})";

// Input(4) -> Dense(3, activation), glorot_uniform(seed 5) and zeros.
std::shared_ptr<const Graph> dense_model(Activation act = Activation::linear) {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{4}));
  l.push_back(make_dense(3, act, true, glorot_uniform(5), Initializer{}));
  return chain(std::move(l));
}

std::unique_ptr<Layer> scale_layer(const std::string& graph, uint64_t seed = 3) {
  Json cfg{{"name", "scale"}, {"units", 3}, {"mirrored_graph", parse_json(graph, "graph")}};
  return make_layer("Scale", cfg, seed);
}

// Input(4) -> a traced layer computing Dense(3, relu).
std::shared_ptr<const Graph> traced_model() {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{4}));
  l.push_back(scale_layer(kDenseGraph));
  return chain(std::move(l));
}

std::vector<DeviceSpec> cpus(int n) {
  std::vector<DeviceSpec> d;
  for (int i = 0; i < n; ++i) d.push_back(DeviceSpec{DeviceKind::cpu, i});
  return d;
}

CompileConfig sgd(const LossConfig& loss) {
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::sgd;
  c.optimizer.learning_rate = 0.1;
  c.loss = loss;
  return c;
}

LossConfig builtin(LossKind kind, bool from_logits = false) {
  LossConfig l;
  l.kind = kind;
  l.from_logits = from_logits;
  l.name = "builtin";
  return l;
}

LossConfig traced_loss(const char* graph) {
  LossConfig l;
  l.kind = LossKind::mean_squared_error;  // not read: the graph decides
  l.name = "custom";
  l.graph = traced(graph);
  return l;
}

// Batches of 7, 1 and 5 rows (uneven slices on 2 replicas, and a slice of
// no rows): x in [-1, 1),
// targets regression values or one-hot rows, optional sample weights.
struct Data {
  int64_t rows;
  Vec x, y, w;
};
Data data(int64_t rows, uint32_t seed, bool onehot) {
  Data d{rows, uniform_floats(static_cast<size_t>(rows * 4), 41, seed), {}, {}};
  d.y = uniform_floats(static_cast<size_t>(rows * 3), 42, seed);
  if (onehot)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < 3; ++j) d.y[static_cast<size_t>(r * 3 + j)] = (r + seed) % 3 == j;
  d.w = uniform_floats(static_cast<size_t>(rows), 43, seed, 0.25f, 2.0f);
  return d;
}
HostBatch batch(const Data& d, bool weights) {
  HostBatch b;
  b.rows = d.rows;
  b.parts = {HostComponent{d.x.data(), 4}, HostComponent{d.y.data(), 3}};
  if (weights) b.parts.push_back(HostComponent{d.w.data(), 1});
  return b;
}

struct Result {
  Vec params, state;
  std::vector<double> train, eval;  // read_metrics() after training, after evaluation
};

// Three SGD steps from `init` (or the graph's initial weights), then an
// evaluation of one batch.
Result run(std::shared_ptr<const Graph> g, int replicas, const CompileConfig& c, bool onehot,
           bool weights, const Vec* init = nullptr) {
  Model m(std::move(g), cpus(replicas), 1);
  if (init != nullptr) m.set_params(*init);
  m.compile(c);
  const int64_t rows[] = {7, 1, 5};
  for (uint32_t s = 0; s < 3; ++s) {
    const Data d = data(rows[s], s, onehot);
    m.train_step(batch(d, weights));
  }
  Result r{m.get_params(), m.get_state(), m.read_metrics(), {}};
  for (int k = 1; k < replicas; ++k) EXPECT_EQ(m.get_params(k), r.params) << "replica " << k;
  m.reset_metrics();
  const Data d = data(6, 9, onehot);
  const HostBatch b = batch(d, weights);
  m.start_eval_step(b);
  m.finish_step();
  r.eval = m.read_metrics();
  return r;
}

double rel_diff(const Vec& a, const Vec& b) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += std::pow(double{a[i]} - b[i], 2);
    den += std::pow(double{b[i]}, 2);
  }
  return std::sqrt(num / std::max(den, 1e-30));
}
double rel_diff(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-30); }

void expect_same(const Result& got, const Result& want, const std::string& what) {
  ASSERT_EQ(got.params.size(), want.params.size());
  EXPECT_LT(rel_diff(got.params, want.params), 1e-6) << what << ": weights";
  // The weights moved: the comparison is not between two unchanged copies.
  ASSERT_EQ(got.train.size(), want.train.size());
  ASSERT_EQ(got.eval.size(), want.eval.size());
  for (size_t i = 0; i < got.train.size(); ++i)
    EXPECT_LT(rel_diff(got.train[i], want.train[i]), 1e-6)
        << what << ": training value " << i << " " << got.train[i] << " vs " << want.train[i];
  for (size_t i = 0; i < got.eval.size(); ++i)
    EXPECT_LT(rel_diff(got.eval[i], want.eval[i]), 1e-6)
        << what << ": evaluation value " << i << " " << got.eval[i] << " vs " << want.eval[i];
}

TEST(TracedUsers, MseLossGivesTheBuiltInLossAndWeights) {
  for (int n : {1, 2})
    for (bool w : {false, true}) {
      const Result want =
          run(dense_model(), n, sgd(builtin(LossKind::mean_squared_error)), false, w);
      const Result got = run(dense_model(), n, sgd(traced_loss(kMse)), false, w);
      const Vec p0 = Model(dense_model(), cpus(1), 1).get_params();
      EXPECT_GT(rel_diff(want.params, p0), 1e-3) << "training must move the weights";
      expect_same(got, want,
                  "mse, " + std::to_string(n) + " replicas, weights " + std::to_string(w));
    }
}

TEST(TracedUsers, CategoricalCrossentropyFromLogitsGivesTheBuiltIn) {
  for (int n : {1, 2}) {
    const Result want =
        run(dense_model(), n, sgd(builtin(LossKind::categorical_crossentropy, true)), true, true);
    const Result got = run(dense_model(), n, sgd(traced_loss(kCce)), true, true);
    expect_same(got, want, "cce, " + std::to_string(n) + " replicas");
  }
}

// -take_along_axis(log_softmax(y_pred), cast(y_true, "int32"), axis = -1):
// the stable sparse cross-entropy from logits against the built-in, with
// class-index targets (1 per sample) and sample weights.
TEST(TracedUsers, SparseCategoricalCrossentropyFromLogitsGivesTheBuiltIn) {
  const char* sparse = R"({"inputs": [{"shape": [null, 1]}, {"shape": [null, 3]}],
    "nodes": [{"op": "log_softmax", "in": [["input", 1]], "attrs": {"axis": -1}},
              {"op": "cast", "in": [["input", 0]], "attrs": {"dtype": "int32"}},
              {"op": "take_along_axis", "in": [["node", 0], ["node", 1]], "attrs": {"axis": -1}},
              {"op": "negative", "in": [["node", 2]]}],
    "outputs": [["node", 3]]})";
  for (int n : {1, 2}) {
    std::vector<Vec> params;
    std::vector<std::vector<double>> logs;
    for (bool use_graph : {false, true}) {
      Model m(dense_model(), cpus(n), 1);
      m.compile(sgd(use_graph ? traced_loss(sparse)
                              : builtin(LossKind::sparse_categorical_crossentropy, true)));
      for (uint32_t s = 0; s < 3; ++s) {
        const Data d = data(7 - 2 * (s % 2), s, false);
        Vec y;
        for (int64_t r = 0; r < d.rows; ++r) y.push_back(static_cast<float>((r * 7 + s) % 3));
        HostBatch b;
        b.rows = d.rows;
        b.parts = {HostComponent{d.x.data(), 4}, HostComponent{y.data(), 1},
                   HostComponent{d.w.data(), 1}};
        m.train_step(b);
      }
      params.push_back(m.get_params());
      logs.push_back(m.read_metrics());
    }
    EXPECT_LT(rel_diff(params[1], params[0]), 1e-6) << n << " replicas";
    EXPECT_LT(rel_diff(logs[1][0], logs[0][0]), 1e-6) << n << " replicas";
  }
}

// A function returning the batch mean (one value) equals the per-sample form
// on 1 and 2 replicas (each replica weighs its local mean by its rows).
TEST(TracedUsers, ScalarLossIsABatchMean) {
  for (int n : {1, 2}) {
    const Result want = run(dense_model(), n, sgd(traced_loss(kMse)), false, false);
    const Result got = run(dense_model(), n, sgd(traced_loss(kMseScalar)), false, false);
    expect_same(got, want, "scalar mse, " + std::to_string(n) + " replicas");
  }
}

TEST(TracedUsers, MaeMetricGivesTheBuiltInMetric) {
  for (int n : {1, 2})
    for (bool w : {false, true}) {
      CompileConfig c = sgd(builtin(LossKind::mean_squared_error));
      MetricConfig builtin_mae;
      builtin_mae.kind = MetricKind::mean_absolute_error;
      builtin_mae.name = "mae";
      builtin_mae.weighted = w;
      MetricConfig custom;
      custom.kind = MetricKind::mean_metric_wrapper;
      custom.name = "mae2";
      custom.weighted = w;
      custom.graph = traced(kMae);
      c.metrics = {builtin_mae, custom};
      const Result r = run(dense_model(), n, c, false, true);
      ASSERT_EQ(r.train.size(), 3u);
      EXPECT_GT(r.train[1], 0.1);
      EXPECT_LT(rel_diff(r.train[2], r.train[1]), 1e-6) << n << " replicas, weighted " << w;
      EXPECT_LT(rel_diff(r.eval[2], r.eval[1]), 1e-6) << n << " replicas, weighted " << w;
    }
}

TEST(TracedUsers, TracedLayerTrainsToDenseWeights) {
  // The same initial weights: Dense's, copied into the traced layer.
  const Vec init = Model(dense_model(Activation::relu), cpus(1), 1).get_params();
  for (int n : {1, 2}) {
    const CompileConfig c = sgd(builtin(LossKind::mean_squared_error));
    const Result want = run(dense_model(Activation::relu), n, c, false, true, &init);
    const Result got = run(traced_model(), n, c, false, true, &init);
    EXPECT_GT(rel_diff(want.params, init), 1e-3) << "training must move the weights";
    expect_same(got, want, "traced layer, " + std::to_string(n) + " replicas");
  }
}

// A non-trainable weight (state, which the graph only reads) ahead of the
// trainable ones in the graph's order: relu(x %*% w + b) * s with s = ones
// trains like Dense(relu), and s stays ones.
TEST(TracedUsers, TracedLayerWithStateTrainsToDenseWeights) {
  const char* graph = R"({"inputs": [{"shape": [null, 4]}],
    "weights": [{"name": "s", "shape": [3], "initializer": "ones", "trainable": false},
                {"name": "w", "shape": [4, 3], "initializer": "glorot_uniform"},
                {"name": "b", "shape": [3], "initializer": "zeros"}],
    "nodes": [{"op": "matmul", "in": [["input", 0], ["weight", 1]]},
              {"op": "add", "in": [["node", 0], ["weight", 2]]},
              {"op": "relu", "in": [["node", 1]]},
              {"op": "multiply", "in": [["node", 2], ["weight", 0]]}],
    "outputs": [["node", 3]]})";
  const auto layer = scale_layer(graph);
  const std::vector<WeightSpec> w = layer->weights({Shape{4}});
  ASSERT_EQ(w.size(), 3u);
  EXPECT_FALSE(w[0].trainable);
  EXPECT_EQ(w[0].init.kind, Initializer::Kind::ones);
  EXPECT_TRUE(w[1].trainable && w[2].trainable);
  const Vec init = Model(dense_model(Activation::relu), cpus(1), 1).get_params();
  for (int n : {1, 2}) {
    std::vector<std::unique_ptr<Layer>> l;
    l.push_back(make_input_layer(Shape{4}));
    l.push_back(scale_layer(graph));
    auto g = chain(std::move(l));
    ASSERT_EQ(g->params().size(), 2u);
    ASSERT_EQ(g->states().size(), 1u);
    const CompileConfig c = sgd(builtin(LossKind::mean_squared_error));
    const Result want = run(dense_model(Activation::relu), n, c, false, true, &init);
    const Result got = run(g, n, c, false, true, &init);
    ASSERT_GE(got.state.size(), 3u);
    EXPECT_EQ(Vec(got.state.begin(), got.state.begin() + 3), Vec(3, 1.0f));
    expect_same(got, want, "traced layer with state, " + std::to_string(n) + " replicas");
  }
}

TEST(TracedUsers, TracedLayerSpecAndConfig) {
  const auto layer = scale_layer(kDenseGraph);
  EXPECT_STREQ(layer->class_name(), "Scale");
  EXPECT_EQ(layer->output_shape({Shape{4}}), Shape{3});
  const std::vector<WeightSpec> w = layer->weights({Shape{4}});
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].name, "w");
  EXPECT_EQ(w[0].shape, (Shape{4, 3}));
  EXPECT_EQ(w[0].init.kind, Initializer::Kind::glorot_uniform);
  EXPECT_EQ(w[1].name, "b");
  EXPECT_EQ(w[1].init.kind, Initializer::Kind::zeros);
  const Json c = layer_config(*layer);
  std::vector<std::string> keys;
  for (auto it = c.begin(); it != c.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys,
            (std::vector<std::string>{"name", "trainable", "dtype", "units", "mirrored_graph"}));
  EXPECT_EQ(c["units"], 3);
  // The config makes the same layer again (R keeps and saves it).
  const auto again = make_layer("Scale", c, 3);
  EXPECT_EQ(layer_config(*again), c);
  // A Lambda layer: no weights, a constant.
  const auto lambda =
      make_layer("Lambda",
                 Json{{"name", "lambda"},
                      {"mirrored_graph", parse_json(R"({"inputs": [{"shape": [null, 2]}],
              "constants": [{"shape": [], "values": [2.0]}],
              "nodes": [{"op": "multiply", "in": [["input", 0], ["constant", 0]]}],
              "outputs": [["node", 0]]})",
                                                    "graph")}},
                 0);
  EXPECT_STREQ(lambda->class_name(), "Lambda");
  EXPECT_TRUE(lambda->weights({Shape{2}}).empty());
  // Empty attrs written as [] (an R list) read as {}.
  const auto relu =
      make_layer("Lambda",
                 Json{{"name", "relu"},
                      {"mirrored_graph", parse_json(R"({"inputs": [{"shape": [null, 2]}],
              "nodes": [{"op": "relu", "in": [["input", 0]], "attrs": []}],
              "outputs": [["node", 0]]})",
                                                    "graph")}},
                 0);
  EXPECT_TRUE(layer_config(*relu)["mirrored_graph"]["nodes"][0]["attrs"].is_object());
}

// A Lambda layer's constants live in its work region, written when the
// executor sizes it: predictions are x * 2 + 1 on 2 replicas, after a larger
// batch grew (and rewrote) the buffers.
TEST(TracedUsers, LambdaConstantsSurviveReallocation) {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{2}));
  l.push_back(make_layer("Lambda",
                         Json{{"name", "lambda"},
                              {"mirrored_graph", parse_json(R"({"inputs": [{"shape": [null, 2]}],
              "constants": [{"shape": [], "values": [2.0]}, {"shape": [2], "values": [1.0, -1.0]}],
              "nodes": [{"op": "multiply", "in": [["input", 0], ["constant", 0]]},
                        {"op": "add", "in": [["node", 0], ["constant", 1]]}],
              "outputs": [["node", 1]]})",
                                                            "graph")}},
                         0));
  Model m(chain(std::move(l)), cpus(2), 1);
  for (int64_t rows : {3, 9}) {
    const Vec x = uniform_floats(static_cast<size_t>(rows * 2), 7, static_cast<uint32_t>(rows));
    HostBatch b;
    b.rows = rows;
    b.parts = {HostComponent{x.data(), 2}};
    Vec out(x.size());
    m.predict_step(b, std::vector<float*>{out.data()});
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_FLOAT_EQ(out[i], x[i] * 2.0f + (i % 2 == 0 ? 1.0f : -1.0f)) << rows << " rows, " << i;
  }
}

template <class F>
std::string error_of(ErrorKind kind, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(TracedUsers, Errors) {
  // A layer graph traced for other input shapes than the layer gets.
  std::string msg = error_of(ErrorKind::shape, [] {
    std::vector<std::unique_ptr<Layer>> l;
    l.push_back(make_input_layer(Shape{5}));
    l.push_back(scale_layer(kDenseGraph));
    chain(std::move(l));
  });
  EXPECT_NE(msg.find("Scale 'scale'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(5,)"), std::string::npos) << msg;
  // A layer graph whose output has no batch axis.
  msg = error_of(ErrorKind::shape, [] {
    scale_layer(R"({"inputs": [{"shape": [null, 4]}],
      "nodes": [{"op": "sum", "in": [["input", 0]]}], "outputs": [["node", 0]]})");
  });
  EXPECT_NE(msg.find("Scale 'scale'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("batch axis"), std::string::npos) << msg;
  // Loss graphs of 1 and 3 inputs.
  for (const char* g : {R"({"inputs": [{"shape": [null, 3]}],
        "nodes": [{"op": "square", "in": [["input", 0]]}], "outputs": [["node", 0]]})",
                        R"({"inputs": [{"shape": [null, 3]}, {"shape": [null, 3]},
          {"shape": [null, 3]}],
        "nodes": [{"op": "subtract", "in": [["input", 1], ["input", 2]]}],
        "outputs": [["node", 0]]})"}) {
    Model m(dense_model(), cpus(1), 1);
    msg = error_of(ErrorKind::value, [&] { m.compile(sgd(traced_loss(g))); });
    EXPECT_NE(msg.find("loss 'custom'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("2 inputs"), std::string::npos) << msg;
    EXPECT_FALSE(m.compiled());
  }
  // y_pred traced for another output shape.
  {
    std::vector<std::unique_ptr<Layer>> l;
    l.push_back(make_input_layer(Shape{4}));
    l.push_back(make_dense(2, Activation::linear, true, glorot_uniform(5), Initializer{}));
    Model m(chain(std::move(l)), cpus(1), 1);
    msg = error_of(ErrorKind::shape, [&] { m.compile(sgd(traced_loss(kMse))); });
    EXPECT_NE(msg.find("y_pred"), std::string::npos) << msg;
  }
  // Targets of another width than y_true's.
  {
    Model m(dense_model(), cpus(1), 1);
    m.compile(sgd(traced_loss(R"({"inputs": [{"shape": [null, 1]}, {"shape": [null, 3]}],
      "nodes": [{"op": "subtract", "in": [["input", 1], ["input", 0]]},
                {"op": "square", "in": [["node", 0]]}],
      "outputs": [["node", 1]]})")));
    const Data d = data(4, 0, false);
    msg = error_of(ErrorKind::shape, [&] { m.train_step(batch(d, false)); });
    EXPECT_NE(msg.find("needs 1"), std::string::npos) << msg;
    // A metric whose y_true differs from the loss's.
    CompileConfig c = sgd(builtin(LossKind::mean_squared_error));
    MetricConfig bad;
    bad.kind = MetricKind::mean_metric_wrapper;
    bad.name = "narrow";
    bad.graph = m.config().loss.graph;
    c.metrics = {bad};
    msg = error_of(ErrorKind::value, [&] { m.compile(c); });
    EXPECT_NE(msg.find("metric 'narrow'"), std::string::npos) << msg;
  }
}

// After the first step, training steps of that size or smaller and an
// evaluation step allocate nothing on either replica, with a traced layer,
// loss and metric.
TEST(TracedUsers, StepsAllocateNothing) {
  Model m(traced_model(), cpus(2), 1);
  CompileConfig c = sgd(traced_loss(kMse));
  MetricConfig custom;
  custom.kind = MetricKind::mean_metric_wrapper;
  custom.name = "mae2";
  custom.graph = traced(kMae);
  c.metrics = {custom};
  m.compile(c);
  const Data big = data(11, 0, false);
  m.train_step(batch(big, true));
  const int64_t before =
      m.replica_backend(0).system_allocations() + m.replica_backend(1).system_allocations();
  for (int64_t rows : {11, 5, 1}) {
    const Data d = data(rows, static_cast<uint32_t>(rows), false);
    m.train_step(batch(d, true));
  }
  const Data e = data(7, 3, false);
  const HostBatch eb = batch(e, true);
  m.start_eval_step(eb);
  m.finish_step();
  EXPECT_TRUE(std::isfinite(m.read_metrics()[0]));
  EXPECT_EQ(m.replica_backend(0).system_allocations() + m.replica_backend(1).system_allocations(),
            before);
}

// Backend::traced_reduce against a double reference: batched and not, with
// and without weights and gradient.
std::vector<double> reduce_ref(bool batched, int64_t rows, int64_t width, const Vec& out,
                               const Vec* w, float scale, Vec* grad) {
  double s = 0.0, c = 0.0;
  for (int64_t r = 0; r < rows; ++r) c += w ? (*w)[static_cast<size_t>(r)] : 1.0;
  if (batched) {
    for (int64_t r = 0; r < rows; ++r) {
      double m = 0.0;
      for (int64_t j = 0; j < width; ++j) m += out[static_cast<size_t>(r * width + j)];
      const double wr = w ? (*w)[static_cast<size_t>(r)] : 1.0;
      s += wr * m / static_cast<double>(width);
      for (int64_t j = 0; j < width; ++j)
        (*grad)[static_cast<size_t>(r * width + j)] = static_cast<float>(scale * wr / width);
    }
  } else {
    double m = 0.0;
    for (int64_t j = 0; j < width; ++j) m += out[static_cast<size_t>(j)];
    s = m / static_cast<double>(width) * c;
    for (int64_t j = 0; j < width; ++j)
      (*grad)[static_cast<size_t>(j)] = static_cast<float>(scale * c / width);
  }
  return {s, c};
}

std::vector<double> reduce_on(Backend& be, bool batched, int64_t rows, int64_t width,
                              const Vec& out, const Vec* w, float scale, Vec* grad) {
  auto put = [&](const Vec& v) {
    DeviceBuffer b = be.allocate(std::max<size_t>(v.size(), 1) * 4);
    be.upload(b.get(), v.data(), v.size() * 4);
    return b;
  };
  DeviceBuffer o = put(out), wb = put(w ? *w : Vec{}), g = put(*grad);
  const std::vector<double> init{0.5, 0.25};
  DeviceBuffer acc = be.allocate(2 * sizeof(double));
  be.upload(acc.get(), init.data(), 2 * sizeof(double));
  auto* a = static_cast<double*>(acc.get());
  be.traced_reduce(batched, rows, width, static_cast<const float*>(o.get()),
                   w ? static_cast<const float*>(wb.get()) : nullptr, scale,
                   static_cast<float*>(g.get()), a, a + 1);
  std::vector<double> res(2);
  be.download(res.data(), acc.get(), 2 * sizeof(double));
  be.download(grad->data(), g.get(), grad->size() * 4);
  return {res[0] - 0.5, res[1] - 0.25};
}

TEST(TracedUsers, TracedReduceMatchesAReference) {
  CpuBackend be(0, 2);
  for (bool batched : {true, false})
    for (bool weighted : {false, true}) {
      const int64_t rows = 300, width = 3;
      const Vec out = uniform_floats(static_cast<size_t>(batched ? rows * width : width), 1);
      const Vec w = uniform_floats(static_cast<size_t>(rows), 2, 0, 0.0f, 2.0f);
      Vec g_ref(out.size()), g(out.size());
      const auto want =
          reduce_ref(batched, rows, width, out, weighted ? &w : nullptr, 0.125f, &g_ref);
      const auto got =
          reduce_on(be, batched, rows, width, out, weighted ? &w : nullptr, 0.125f, &g);
      EXPECT_NEAR(got[0], want[0], 1e-9 * (1 + std::fabs(want[0])));
      EXPECT_NEAR(got[1], want[1], 1e-9 * (1 + std::fabs(want[1])));
      EXPECT_EQ(g, g_ref);
    }
}

TEST(GpuTracedUsers, TracedReduceMatchesTheCpu) {
  MR_REQUIRE_GPUS(1);
  auto cpu = make_cpu_backend(0, 2);
  auto dev = make_cuda_backend(0, 0);
  for (bool batched : {true, false})
    for (bool weighted : {false, true}) {
      const int64_t rows = 1000, width = 5;
      const Vec out = uniform_floats(static_cast<size_t>(batched ? rows * width : width), 3);
      const Vec w = uniform_floats(static_cast<size_t>(rows), 4, 0, 0.0f, 2.0f);
      Vec ga(out.size()), gb(out.size());
      const auto a = reduce_on(*cpu, batched, rows, width, out, weighted ? &w : nullptr, 0.5f, &ga);
      const auto b = reduce_on(*dev, batched, rows, width, out, weighted ? &w : nullptr, 0.5f, &gb);
      EXPECT_NEAR(b[0], a[0], 1e-9 * (1 + std::fabs(a[0])));
      EXPECT_NEAR(b[1], a[1], 1e-9 * (1 + std::fabs(a[1])));
      EXPECT_EQ(gb, ga);
    }
}

// A model with a traced layer, loss and metric trains on a GPU to the CPU's
// weights (1e-5 relative: different summation orders).
TEST(GpuTracedUsers, TracedModelMatchesTheCpu) {
  MR_REQUIRE_GPUS(1);
  CompileConfig c = sgd(traced_loss(kMse));
  MetricConfig custom;
  custom.kind = MetricKind::mean_metric_wrapper;
  custom.name = "mae2";
  custom.graph = traced(kMae);
  c.metrics = {custom};
  const Result cpu = run(traced_model(), 1, c, false, true);
  Model m(traced_model(), {DeviceSpec{DeviceKind::cuda, 0}}, 1);
  m.compile(c);
  const int64_t rows[] = {7, 1, 5};
  for (uint32_t s = 0; s < 3; ++s) {
    const Data d = data(rows[s], s, false);
    m.train_step(batch(d, true));
  }
  EXPECT_LT(rel_diff(m.get_params(), cpu.params), 1e-5);
  const std::vector<double> got = m.read_metrics();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LT(rel_diff(got[i], cpu.train[i]), 1e-5) << i;
}

}  // namespace
}  // namespace mr
