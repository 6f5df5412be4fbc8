// CUDA graphs of the training step (train/step_graphs.h). The policy (which
// step warms up, captures, replays or runs eagerly) and the CPU path run
// everywhere; the GPU tests (skipped without a device, failures under
// MIRRORED_TEST_CUDA=1) train the vignette's model with graphs on and off and
// compare the weights bit for bit: a replay must do exactly what the eager
// step does, with each step's values (learning rate factors, the dropout
// step key) read from the device block.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "core/rng.h"
#include "tests/graphs.h"
#include "tests/test_util.h"
#include "train/model.h"
#include "train/step_graphs.h"

namespace mr {
namespace {

StepGraphKey key(int64_t rows) {
  StepGraphKey k;
  k.global_rows = rows;
  k.parts = 2;
  k.loss.push_back(LossParams{});
  return k;
}

TEST(StepGraphsPolicy, WarmsUpCapturesThenReplaysAndRunsOtherShapesEagerly) {
  StepGraphs g(2);
  EXPECT_EQ(g.decide(key(64), true), StepMode::eager);    // warm-up
  EXPECT_EQ(g.decide(key(64), true), StepMode::capture);  // second step: captured
  EXPECT_EQ(g.decide(key(64), true), StepMode::replay);
  EXPECT_EQ(g.decide(key(64), true), StepMode::replay);
  EXPECT_EQ(g.decide(key(37), true), StepMode::eager);   // the last short batch
  EXPECT_EQ(g.decide(key(64), true), StepMode::replay);  // next epoch: the graph is kept
  EXPECT_EQ(g.stats().replays, 3);
  EXPECT_EQ(g.stats().captures, 1);
  EXPECT_EQ(g.stats().eager_steps, 2);
  EXPECT_FALSE(g.stats().failed);
}

TEST(StepGraphsPolicy, AnotherBatchSizeCapturesAgain) {
  StepGraphs g(1);
  for (StepMode want : {StepMode::eager, StepMode::capture, StepMode::replay})
    EXPECT_EQ(g.decide(key(64), true), want);
  for (StepMode want : {StepMode::eager, StepMode::capture, StepMode::replay})
    EXPECT_EQ(g.decide(key(32), true), want);
  EXPECT_EQ(g.stats().captures, 2);
}

TEST(StepGraphsPolicy, PerBatchLossArgumentsAreOfTheKey) {
  StepGraphs g(1);
  StepGraphKey a = key(64), b = key(64);
  b.loss[0].valid_weight = 1.25f;  // ignore_class: another count of valid rows
  EXPECT_TRUE(same_key(a, key(64)));
  EXPECT_FALSE(same_key(a, b));
  g.decide(a, true);
  EXPECT_EQ(g.decide(a, true), StepMode::capture);
  EXPECT_EQ(g.decide(b, true), StepMode::eager);
  StepGraphKey c = key(64);
  c.parts = 3;  // sample weights
  EXPECT_FALSE(same_key(a, c));
}

TEST(StepGraphsPolicy, DisabledIneligibleAndInvalidated) {
  StepGraphs g(1);
  g.set_enabled(false);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(g.decide(key(64), true), StepMode::eager);
  g.set_enabled(true);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(g.decide(key(64), false), StepMode::eager);
  EXPECT_EQ(g.decide(key(64), true), StepMode::eager);
  EXPECT_EQ(g.decide(key(64), true), StepMode::capture);
  g.invalidate();  // reserve growth, compile()
  EXPECT_EQ(g.decide(key(64), true), StepMode::eager);
  EXPECT_EQ(g.decide(key(64), true), StepMode::capture);
  EXPECT_EQ(g.stats().replays, 0);
  EXPECT_EQ(g.stats().eager_steps, 8);
}

TEST(StepGraphsPolicy, ABackendWithoutGraphsRunsTheBodyOnceAndTurnsGraphsOff) {
  CpuBackend be(0, 1);
  StepGraphs g(1);
  g.decide(key(64), true);
  ASSERT_EQ(g.decide(key(64), true), StepMode::capture);
  int ran = 0;
  g.run(0, be, StepMode::capture, [&] { ++ran; });
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(g.decide(key(64), true), StepMode::eager);
  EXPECT_TRUE(g.stats().failed);
  // A replay whose graph is missing runs the body eagerly too.
  g.run(0, be, StepMode::replay, [&] { ++ran; });
  EXPECT_EQ(ran, 2);
}

struct Data {
  std::vector<float> x, y;
  HostBatch batch;
};

Data data(int64_t rows, uint32_t seed, float bad_label = -1.0f) {
  const RandomStream rs(99, 0, seed);
  Data d;
  d.x.resize(static_cast<size_t>(rows * 784));
  for (size_t i = 0; i < d.x.size(); ++i) d.x[i] = rs.uniform(i);
  for (int64_t r = 0; r < rows; ++r) d.y.push_back(static_cast<float>((r + seed) % 10));
  if (bad_label >= 0) d.y.back() = bad_label;
  d.batch.rows = rows;
  d.batch.parts = {HostComponent{d.x.data(), 784}, HostComponent{d.y.data(), 1}};
  return d;
}

struct Trained {
  std::vector<float> params;
  StepGraphStats stats;
};

// The vignette's model with dropout (the step key is read from the device
// block) trained on `sizes` (one step per entry, each batch different).
Trained train(std::vector<DeviceSpec> devs, bool graphs, const std::vector<int64_t>& sizes) {
  Model m(vignette_mlp(5, 0.2, 3), std::move(devs), PlacementOptions{});
  CompileConfig c;
  c.loss.from_logits = true;
  c.metrics.push_back(MetricConfig{});
  m.compile(c);
  m.set_cuda_graphs(graphs);
  for (size_t s = 0; s < sizes.size(); ++s) {
    const Data d = data(sizes[s], static_cast<uint32_t>(s));
    m.train_step(d.batch);
  }
  EXPECT_TRUE(std::isfinite(m.read_metrics()[0]));
  for (int r = 1; r < m.replicas(); ++r) EXPECT_EQ(m.get_params(r), m.get_params(0));
  return {m.get_params(), m.cuda_graph_stats()};
}

TEST(StepGraphsCpu, CpuReplicasNeverCapture) {
  const Trained r = train({DeviceSpec{DeviceKind::cpu, 0}, DeviceSpec{DeviceKind::cpu, 1}}, true,
                          {64, 64, 64, 37});
  EXPECT_EQ(r.stats.replays, 0);
  EXPECT_EQ(r.stats.captures, 0);
  EXPECT_EQ(r.stats.eager_steps, 4);
}

DeviceSpec gpu(int index) { return DeviceSpec{DeviceKind::cuda, index}; }

TEST(StepGraphsGpu, ReplayGivesTheEagerWeightsBitForBit) {
  MR_REQUIRE_GPUS(1);
  const std::vector<int64_t> sizes{64, 64, 64, 64, 64, 64, 37};
  const Trained eager = train({gpu(0)}, false, sizes);
  const Trained graph = train({gpu(0)}, true, sizes);
  EXPECT_EQ(eager.stats.replays, 0);
  EXPECT_EQ(eager.stats.eager_steps, 7);
  // Step 1 warms up, step 2 is captured, steps 3-6 replay, the short last
  // batch runs eagerly.
  EXPECT_EQ(graph.stats.captures, 1);
  EXPECT_EQ(graph.stats.replays, 4);
  EXPECT_EQ(graph.stats.eager_steps, 2);
  EXPECT_FALSE(graph.stats.failed);
  EXPECT_EQ(graph.params, eager.params);
}

TEST(StepGraphsGpu, AnotherBatchSizeCapturesAgain) {
  MR_REQUIRE_GPUS(1);
  const std::vector<int64_t> sizes{64, 64, 64, 32, 32, 32, 32, 64};
  const Trained eager = train({gpu(0)}, false, sizes);
  const Trained graph = train({gpu(0)}, true, sizes);
  EXPECT_EQ(graph.stats.captures, 2);  // 64, then 32 (the 64 graph was replaced)
  EXPECT_EQ(graph.stats.replays, 3);   // one at 64, two at 32
  EXPECT_EQ(graph.stats.eager_steps, 3);
  EXPECT_EQ(graph.params, eager.params);
}

TEST(StepGraphsGpu, ReserveGrowthCapturesAgain) {
  MR_REQUIRE_GPUS(1);
  const std::vector<int64_t> sizes{32, 32, 32, 64, 64, 64};
  const Trained eager = train({gpu(0)}, false, sizes);
  const Trained graph = train({gpu(0)}, true, sizes);
  EXPECT_EQ(graph.stats.captures, 2);
  EXPECT_EQ(graph.stats.replays, 2);
  EXPECT_EQ(graph.params, eager.params);
}

TEST(StepGraphsGpu, ABadLabelInAReplayedStepIsReported) {
  MR_REQUIRE_GPUS(1);
  Model m(vignette_mlp(5), {gpu(0)}, PlacementOptions{});
  CompileConfig c;
  c.loss.from_logits = true;
  m.compile(c);
  for (int s = 0; s < 3; ++s) m.train_step(data(64, static_cast<uint32_t>(s)).batch);
  m.read_metrics();
  const Data bad = data(64, 7, 12.0f);
  m.train_step(bad.batch);
  ASSERT_EQ(m.cuda_graph_stats().replays, 2);  // this step was replayed
  EXPECT_THROW(m.read_metrics(), Error);
}

TEST(StepGraphsGpu, NcclReplicasReplayTheAllReduce) {
  MR_REQUIRE_GPUS(2);
  if (!built_with_nccl()) GTEST_SKIP() << "built without NCCL: the peer copy is not captured";
  const std::vector<int64_t> sizes{64, 64, 64, 64, 37};
  const Trained eager = train({gpu(0), gpu(1)}, false, sizes);
  const Trained graph = train({gpu(0), gpu(1)}, true, sizes);
  EXPECT_EQ(graph.stats.replays, 2);
  EXPECT_EQ(graph.params, eager.params);
}

}  // namespace
}  // namespace mr
