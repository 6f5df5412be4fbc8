// Dynamic loss scaling (train/loss_scale.h) on CPU replicas: an overflow
// injected into one replica's gradient after the all-reduce skips that step
// on every replica (weights, slots and iterations unchanged, the scale
// halved), the scale doubles after dynamic_growth_steps finite steps, and a
// power-of-two scale leaves the training bit-identical to no scaling.
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

constexpr int64_t kIn = 5, kHidden = 6, kOut = 3, kRows = 8;

std::shared_ptr<const Graph> mlp() {
  std::vector<GraphNode> nodes(3);
  nodes[0].name = "input_layer";
  nodes[0].layer = make_input_layer(Shape{kIn});
  nodes[1].name = "dense";
  nodes[1].layer = make_dense(kHidden, Activation::tanh, true, normal(1, 0.5), normal(2, 0.3));
  nodes[1].inputs = {0};
  nodes[2].name = "dense_1";
  nodes[2].layer = make_dense(kOut, Activation::linear, true, normal(3, 0.5), normal(4, 0.3));
  nodes[2].inputs = {1};
  return std::make_shared<const Graph>(std::move(nodes), std::vector<int>{0}, std::vector<int>{2});
}

std::vector<DeviceSpec> cpus(int n) {
  std::vector<DeviceSpec> d;
  for (int i = 0; i < n; ++i) d.push_back(DeviceSpec{DeviceKind::cpu, i});
  return d;
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

CompileConfig adam_mse(bool scaling, double initial = 32768.0, int64_t growth = 2000) {
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::adam;
  c.optimizer.learning_rate = 0.01;
  c.optimizer.use_ema = true;  // the EMA skips too
  c.loss.kind = LossKind::mean_squared_error;
  c.loss.name = "mse";
  c.loss_scale.dynamic = scaling;
  c.loss_scale.initial_scale = initial;
  c.loss_scale.dynamic_growth_steps = growth;
  return c;
}

TEST(LossScale, InjectedOverflowSkipsTheSameStepOnEveryReplica) {
  for (int replicas : {1, 2, 4}) {
    SCOPED_TRACE("replicas = " + std::to_string(replicas));
    Model m(mlp(), cpus(replicas), 1);
    m.compile(adam_mse(true));
    Data d1 = data(1), d2 = data(2), d3 = data(3);
    m.train_step(d1.batch());
    EXPECT_EQ(m.iterations(), 1);
    EXPECT_FALSE(m.loss_scale_state().last_skipped);
    EXPECT_EQ(m.loss_scale_state().step_counter, 1);
    std::vector<std::vector<float>> before, slots_before, ema_before;
    for (int r = 0; r < replicas; ++r) {
      before.push_back(m.get_params(r));
      slots_before.push_back(m.get_slot(0, r));
      ema_before.push_back(m.get_slot(2, r));
    }
    // The Inf reaches the last replica only, after the gradients' all-reduce.
    m.inject_nonfinite_gradient(replicas - 1, 2);
    m.train_step(d2.batch());
    EXPECT_TRUE(m.loss_scale_state().last_skipped);
    EXPECT_EQ(m.loss_scale_state().scale, 16384.0f);
    EXPECT_EQ(m.loss_scale_state().step_counter, 0);
    EXPECT_EQ(m.loss_scale_state().skipped, 1);
    EXPECT_EQ(m.iterations(), 1);
    for (int r = 0; r < replicas; ++r) {
      EXPECT_EQ(m.get_params(r), before[static_cast<size_t>(r)]) << "replica " << r;
      EXPECT_EQ(m.get_slot(0, r), slots_before[static_cast<size_t>(r)]) << "replica " << r;
      EXPECT_EQ(m.get_slot(2, r), ema_before[static_cast<size_t>(r)]) << "replica " << r;
    }
    m.train_step(d3.batch());
    EXPECT_FALSE(m.loss_scale_state().last_skipped);
    EXPECT_EQ(m.iterations(), 2);
    EXPECT_NE(m.get_params(0), before[0]);
    for (int r = 1; r < replicas; ++r) EXPECT_EQ(m.get_params(r), m.get_params(0));

    // The reference: no loss scaling, trained on batches 1 and 3 only. The
    // scale is a power of two, so scaling and unscaling are exact.
    Model ref(mlp(), cpus(replicas), 1);
    ref.compile(adam_mse(false));
    ref.train_step(d1.batch());
    ref.train_step(d3.batch());
    EXPECT_EQ(m.get_params(0), ref.get_params(0));
    EXPECT_EQ(m.get_slot(1, 0), ref.get_slot(1, 0));
  }
}

TEST(LossScale, GrowsAfterDynamicGrowthStepsFiniteSteps) {
  Model m(mlp(), cpus(2), 1);
  m.compile(adam_mse(true, 4.0, 3));
  EXPECT_EQ(m.loss_scale_state().scale, 4.0f);
  const float expect_scale[] = {4.0f, 4.0f, 8.0f, 8.0f, 8.0f, 16.0f};
  const int64_t expect_counter[] = {1, 2, 0, 1, 2, 0};
  for (int i = 0; i < 6; ++i) {
    Data d = data(i);
    m.train_step(d.batch());
    EXPECT_EQ(m.loss_scale_state().scale, expect_scale[i]) << "step " << i + 1;
    EXPECT_EQ(m.loss_scale_state().step_counter, expect_counter[i]) << "step " << i + 1;
  }
  EXPECT_EQ(m.iterations(), 6);
  // An overflow halves the scale and restarts the count.
  m.inject_nonfinite_gradient(0, 7);
  Data d = data(7);
  m.train_step(d.batch());
  EXPECT_EQ(m.loss_scale_state().scale, 8.0f);
  EXPECT_EQ(m.loss_scale_state().step_counter, 0);
  EXPECT_EQ(m.iterations(), 6);
  // A loaded state is used by the next step.
  m.set_loss_scale_state(2.0f, 2);
  m.train_step(d.batch());
  EXPECT_EQ(m.loss_scale_state().scale, 4.0f);
  EXPECT_EQ(m.loss_scale_state().step_counter, 0);
  EXPECT_THROW(m.set_loss_scale_state(0.0f, 0), Error);
  EXPECT_THROW(m.set_loss_scale_state(1.0f, -1), Error);
}

TEST(LossScale, CompileChecksItsSettings) {
  Model m(mlp(), cpus(1), 1);
  EXPECT_THROW(m.compile(adam_mse(true, 0.0)), Error);
  EXPECT_THROW(m.compile(adam_mse(true, 1.0, 0)), Error);
  CompileConfig acc = adam_mse(true);
  acc.optimizer.use_ema = false;
  acc.optimizer.gradient_accumulation_steps = 2;
  try {
    m.compile(acc);
    FAIL() << "loss scaling with accumulation was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gradient_accumulation_steps"), std::string::npos);
  }
  // Without loss scaling the scale is 1 and never moves.
  m.compile(adam_mse(false));
  Data d = data(0);
  m.train_step(d.batch());
  EXPECT_EQ(m.loss_scale_state().scale, 1.0f);
  EXPECT_FALSE(m.loss_scale_state().last_skipped);
}

// The scale moves on the device (core/step_scalars.h): the host queues step
// after step without reading anything, and learns the outcome when it reads
// the state. An overflow in the middle, unseen by the host until the end,
// still gives the weights of the run without the skipped batch: the next
// step's learning rate and Adam's bias corrections come from the table row
// of the applied count, not from the host's count.
TEST(LossScale, StepsQueueWithoutReadingTheDevice) {
  Model m(mlp(), cpus(2), 1);
  m.compile(adam_mse(true, 4.0, 3));
  const int64_t before = m.replica_backend(0).downloads();
  m.inject_nonfinite_gradient(1, 4);
  std::vector<Data> batches;
  for (int i = 0; i < 10; ++i) batches.push_back(data(i));
  for (Data& d : batches) m.train_step(d.batch());
  EXPECT_EQ(m.replica_backend(0).downloads() - before, 0)
      << "the host read the device between loss-scaled steps";
  const LossScaleState st = m.loss_scale_state();
  EXPECT_EQ(m.replica_backend(0).downloads() - before, 1);
  // Growth every 3 finite steps from 4: steps 1-3 -> 8; step 4 skipped -> 4;
  // steps 5-10 (six finite) -> 8, then 16, counter 0.
  EXPECT_EQ(st.scale, 16.0f);
  EXPECT_EQ(st.step_counter, 0);
  EXPECT_EQ(st.skipped, 1);
  EXPECT_FALSE(st.last_skipped);
  EXPECT_EQ(m.iterations(), 9);
  EXPECT_EQ(m.replica_backend(0).downloads() - before, 1)
      << "a second read with no step posted since waited for the device again";
  Model ref(mlp(), cpus(2), 1);
  ref.compile(adam_mse(false));
  for (size_t i = 0; i < batches.size(); ++i)
    if (i != 3) ref.train_step(batches[i].batch());
  EXPECT_EQ(m.get_params(0), ref.get_params(0));
  EXPECT_EQ(m.get_params(1), ref.get_params(0));
  EXPECT_EQ(m.get_slot(2, 0), ref.get_slot(2, 0)) << "the EMA differs";
}

// The host writes the table of the coming steps' blocks again before its
// rows run out (a read of the device every 255 steps), and a run across
// those writes, with a skip and growths, is the run without the skipped
// batch bit for bit.
TEST(LossScale, TheTableIsWrittenAgainBeforeItsRowsRunOut) {
  Model m(mlp(), cpus(2), 1);
  m.compile(adam_mse(true, 4.0, 50));
  Model ref(mlp(), cpus(2), 1);
  ref.compile(adam_mse(false));
  const int64_t before = m.replica_backend(0).downloads();
  m.inject_nonfinite_gradient(0, 200);
  for (int i = 0; i < 600; ++i) {
    Data d = data(i);
    m.train_step(d.batch());
    if (i != 199) ref.train_step(d.batch());
  }
  EXPECT_EQ(m.replica_backend(0).downloads() - before, 2)
      << "expected one read of the device per 255 steps";
  const LossScaleState st = m.loss_scale_state();
  EXPECT_EQ(st.skipped, 1);
  EXPECT_EQ(m.iterations(), 599);
  // 199 finite steps (3 growths, counter 49), the skip (halved, counter 0),
  // 400 finite steps (8 growths): 4 * 2^3 / 2 * 2^8.
  EXPECT_EQ(st.scale, 4.0f * 8.0f / 2.0f * 256.0f);
  EXPECT_EQ(st.step_counter, 0);
  EXPECT_EQ(m.get_params(0), ref.get_params(0));
  EXPECT_EQ(m.get_slot(1, 0), ref.get_slot(1, 0));
}

}  // namespace
}  // namespace mr
