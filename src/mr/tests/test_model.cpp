// The model on a strategy of one replica: one optimizer step against a
// hand-written double-precision reference, the training loop, its hooks, and
// errors surfacing on the caller's thread with the replica and step named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "core/error.h"
#include "data/array_source.h"
#include "dist/batch_split.h"
#include "tests/graphs.h"
#include "train/loop.h"
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

std::shared_ptr<const Graph> one_dense(int64_t in, int64_t out,
                                       Activation act = Activation::linear) {
  std::vector<GraphNode> nodes(2);
  nodes[0].name = "input_layer";
  nodes[0].layer = make_input_layer(Shape{in});
  nodes[1].name = "dense";
  nodes[1].layer = make_dense(out, act, true, normal(1, 0.5), normal(2, 0.1));
  nodes[1].inputs = {0};
  return std::make_shared<const Graph>(std::move(nodes), std::vector<int>{0}, std::vector<int>{1});
}

CompileConfig adam_sparse_ce() {
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::adam;
  c.optimizer.learning_rate = 0.01;
  c.loss.kind = LossKind::sparse_categorical_crossentropy;
  c.loss.from_logits = true;
  c.metrics.push_back(MetricConfig{});
  return c;
}

TEST(Model, OneAdamStepMatchesADoublePrecisionReference) {
  const int64_t in = 3, out = 4, rows = 5;
  Model m(one_dense(in, out), {DeviceSpec{}}, 2);
  m.compile(adam_sparse_ce());
  const std::vector<float> p0 = m.get_params();
  const auto& prm = m.graph().params();
  std::vector<float> x(rows * in), y{0, 3, 1, 2, 3};
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(std::cos(1.3 * static_cast<double>(i)));
  HostBatch b;
  b.rows = rows;
  b.parts = {{x.data(), in}, {y.data(), 1}};
  m.train_step(b);
  const std::vector<float> p1 = m.get_params();

  // Reference: logits = xW + b; g = (softmax - onehot) / rows; Adam step 1.
  std::vector<double> gw(in * out, 0.0), gb(out, 0.0);
  double loss = 0;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> z(out);
    for (int64_t j = 0; j < out; ++j) {
      z[j] = p0[prm[1].offset + j];
      for (int64_t k = 0; k < in; ++k)
        z[j] += double{x[r * in + k]} * p0[prm[0].offset + k * out + j];
    }
    double mx = z[0], s = 0;
    for (double v : z) mx = std::max(mx, v);
    for (double v : z) s += std::exp(v - mx);
    loss += mx + std::log(s) - z[static_cast<size_t>(y[r])];
    for (int64_t j = 0; j < out; ++j) {
      const double d = (std::exp(z[j] - mx) / s - (j == y[r] ? 1.0 : 0.0)) / rows;
      gb[j] += d;
      for (int64_t k = 0; k < in; ++k) gw[k * out + j] += double{x[r * in + k]} * d;
    }
  }
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-7;
  const double alpha = lr * std::sqrt(1 - b2) / (1 - b1);
  auto step = [&](double w, double g) {
    const double mm = (1 - b1) * g, vv = (1 - b2) * g * g;
    return w - alpha * mm / (std::sqrt(vv) + eps);
  };
  for (int64_t i = 0; i < in * out; ++i)
    EXPECT_NEAR(p1[prm[0].offset + i], step(p0[prm[0].offset + i], gw[i]), 1e-5) << "kernel " << i;
  for (int64_t j = 0; j < out; ++j)
    EXPECT_NEAR(p1[prm[1].offset + j], step(p0[prm[1].offset + j], gb[j]), 1e-5) << "bias " << j;
  EXPECT_EQ(m.iterations(), 1);
  EXPECT_NEAR(m.read_metrics()[0], loss / rows, 1e-5);
}

TEST(Model, TrainingLoopLearnsAndReportsRowsAndThreads) {
  const int64_t n = 512, in = 2;
  auto data = std::make_shared<ArrayData>();
  data->rows = n;
  data->widths = {in, 1};
  data->parts.resize(2);
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::sin(0.37f * i), b = std::cos(0.91f * i);
    data->parts[0].push_back(a);
    data->parts[0].push_back(b);
    data->parts[1].push_back(a > b ? 1.0f : 0.0f);
  }
  std::vector<GraphNode> nodes(3);
  nodes[0].name = "in";
  nodes[0].layer = make_input_layer(Shape{in});
  nodes[1].name = "hidden";
  nodes[1].layer = make_dense(16, Activation::relu, true, normal(3, 0.5), Initializer{});
  nodes[1].inputs = {0};
  nodes[2].name = "out";
  nodes[2].layer = make_dense(2, Activation::linear, true, normal(4, 0.5), Initializer{});
  nodes[2].inputs = {1};
  auto g =
      std::make_shared<const Graph>(std::move(nodes), std::vector<int>{0}, std::vector<int>{2});
  Model m(g, {DeviceSpec{}}, 2);
  m.compile(adam_sparse_ce());
  ArraySource src(data, 50, true, 99);
  LoopHooks none;
  const LoopResult first = train_epoch(m, src, 0, -1, none);
  EXPECT_EQ(first.batches, 11);
  EXPECT_EQ(m.rows_last_step(), (std::vector<int64_t>{12}));  // 512 = 10 * 50 + 12
  LoopResult last;
  for (int e = 1; e < 30; ++e) last = train_epoch(m, src, e, -1, none);
  EXPECT_LT(last.logs[0], first.logs[0] * 0.5);
  EXPECT_GT(last.logs[1], 0.9);
  const LoopResult ev = evaluate(m, src, -1, none);
  EXPECT_GT(ev.logs[1], 0.9);
  EXPECT_EQ(m.iterations(), 30 * 11);
  ASSERT_EQ(m.replica_threads().size(), 1u);
  EXPECT_NE(m.replica_threads()[0], std::this_thread::get_id());
  EXPECT_NE(m.replica_param_buffers()[0], nullptr);
}

class CountingHooks : public LoopHooks {
 public:
  bool batch_events() const override { return true; }
  void on_batch_begin(int64_t) override { ++begins; }
  void on_batch_end(int64_t b, const std::vector<double>& logs) override {
    ++ends;
    last_batch = b;
    last_loss = logs.at(0);
  }
  bool interrupted() override { return ends >= stop_after; }
  int begins = 0, ends = 0, stop_after = 1 << 30;
  int64_t last_batch = -1;
  double last_loss = -1;
};

TEST(Model, HooksSeeEveryBatchAndInterruptStopsAtAStepBoundary) {
  auto data = std::make_shared<ArrayData>();
  data->rows = 100;
  data->widths = {3, 1};
  data->parts = {std::vector<float>(300, 0.5f), std::vector<float>(100, 1.0f)};
  Model m(one_dense(3, 2), {DeviceSpec{}}, 1);
  m.compile(adam_sparse_ce());
  ArraySource src(data, 10, false, 0);
  CountingHooks h;
  LoopResult r = train_epoch(m, src, 0, -1, h);
  EXPECT_EQ(h.begins, 10);
  EXPECT_EQ(h.ends, 10);
  EXPECT_EQ(h.last_batch, 9);
  EXPECT_GT(h.last_loss, 0);
  CountingHooks stop;
  stop.stop_after = 3;
  r = train_epoch(m, src, 1, -1, stop);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.batches, 3);
  EXPECT_EQ(m.iterations(), 13);
  // max_batches caps the epoch.
  r = train_epoch(m, src, 2, 4, h);
  EXPECT_EQ(r.batches, 4);
}

TEST(Model, ReplicaErrorsNameReplicaAndStepAndLeaveTheModelUsable) {
  Model m(one_dense(2, 3), {DeviceSpec{}}, 1);
  m.compile(adam_sparse_ce());
  const std::vector<float> before = m.get_params();
  std::vector<float> x{1, 2, 3, 4}, y{0, 7};  // 7 is not a class of 3
  HostBatch b;
  b.rows = 2;
  b.parts = {{x.data(), 2}, {y.data(), 1}};
  try {
    m.train_step(b);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::value);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("replica 0 (cpu:0)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("step 1"), std::string::npos) << msg;
  }
  EXPECT_EQ(m.get_params(), before);
  EXPECT_EQ(m.iterations(), 0);
  y[1] = 2;
  m.train_step(b);
  EXPECT_EQ(m.iterations(), 1);
  // Wrong widths are shape errors.
  b.parts[0].width = 3;
  EXPECT_THROW(m.train_step(b), Error);
}

TEST(Model, PredictIsTheForwardPass) {
  Model m(one_dense(2, 3, Activation::softmax), {DeviceSpec{}}, 1);
  const std::vector<float> p = m.get_params();
  std::vector<float> x{1, -1, 0.5f, 2, 0, 0};
  HostBatch b;
  b.rows = 3;
  b.parts = {{x.data(), 2}};
  std::vector<float> out(9);
  m.predict_step(b, 0, out.data());
  const auto& prm = m.graph().params();
  for (int r = 0; r < 3; ++r) {
    double z[3], s = 0;
    for (int j = 0; j < 3; ++j) {
      z[j] = p[prm[1].offset + j] + x[r * 2] * p[prm[0].offset + j] +
             x[r * 2 + 1] * p[prm[0].offset + 3 + j];
      s += std::exp(z[j]);
    }
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(out[r * 3 + j], std::exp(z[j]) / s, 1e-6);
  }
}

TEST(Model, DevicesAreCheckedAndParsed) {
  EXPECT_EQ(parse_device("/cpu:0").name(), "cpu:0");
  EXPECT_EQ(parse_device("CPU:3").name(), "cpu:3");
  EXPECT_EQ(parse_device("/device:CPU:1").name(), "cpu:1");
  EXPECT_EQ(parse_device("/job:localhost/replica:0/task:0/device:GPU:1").name(), "gpu:1");
  EXPECT_THROW(parse_device("tpu:0"), Error);
  EXPECT_THROW(parse_device("cpu:"), Error);
  EXPECT_THROW(parse_device("cpu:-1"), Error);
  EXPECT_THROW(Model(one_dense(2, 2), {DeviceSpec{}, DeviceSpec{}}, 1), Error);
  EXPECT_THROW(Model(one_dense(2, 2), {}, 1), Error);
}

TEST(Data, ReplicaSlicesAreContiguousAndCoverTheBatch) {
  for (int64_t rows : {0, 1, 3, 7, 64, 65}) {
    for (int n : {1, 2, 3, 4}) {
      int64_t next = 0;
      for (int r = 0; r < n; ++r) {
        int64_t begin = 0, count = 0;
        replica_slice(rows, n, r, begin, count);
        EXPECT_EQ(begin, next);
        EXPECT_EQ(count, rows / n + (r < rows % n ? 1 : 0));
        next = begin + count;
      }
      EXPECT_EQ(next, rows);
    }
  }
}

TEST(Data, ShuffleIsASeededPermutation) {
  const auto a = shuffled_order(1000, 7, 0), b = shuffled_order(1000, 7, 0),
             c = shuffled_order(1000, 7, 1), d = shuffled_order(1000, 8, 0);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
}

// Keras' shuffle = "batch": batch b holds rows b*size .. b*size + size - 1
// (the last batch the rest), each batch's rows permuted among themselves,
// differently in each epoch and batch.
TEST(Data, ShuffleWithinBatchesKeepsEachBatchsRows) {
  auto data = std::make_shared<ArrayData>();
  data->rows = 23;
  data->widths = {1};
  data->parts.emplace_back();
  for (int64_t i = 0; i < data->rows; ++i) data->parts[0].push_back(static_cast<float>(i));
  ArraySource src(data, 8, true, 5, true);
  std::vector<std::vector<float>> epochs;
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    src.reset(epoch);
    std::vector<float> seen;
    HostBatch b;
    int64_t batch = 0;
    bool any_moved = false;
    while (src.next(b)) {
      std::vector<float> rows(b.parts[0].data, b.parts[0].data + b.rows);
      for (float v : rows) seen.push_back(v);
      std::vector<float> sorted = rows;
      std::sort(sorted.begin(), sorted.end());
      for (int64_t i = 0; i < b.rows; ++i)
        EXPECT_EQ(sorted[static_cast<size_t>(i)], static_cast<float>(batch * 8 + i))
            << "epoch " << epoch << " batch " << batch;
      any_moved = any_moved || rows != sorted;
      ++batch;
    }
    EXPECT_EQ(batch, 3);
    EXPECT_TRUE(any_moved) << "no batch was shuffled in epoch " << epoch;
    epochs.push_back(seen);
  }
  EXPECT_NE(epochs[0], epochs[1]);
}

}  // namespace
}  // namespace mr
