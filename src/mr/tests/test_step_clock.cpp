// The step clock (train/step_clock.h): on hand-made timelines its parts
// partition each step's interval by the documented rules (nesting,
// idle-while-drawing-input, reset per epoch); in a real training epoch on 1
// and 2 CPU replicas they add up to the epoch's wall time, and a source or
// a hook that sleeps shows up as input or host time.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "core/backend.h"
#include "core/device_info.h"
#include "core/error.h"
#include "core/gpu_utilization.h"
#include "data/array_source.h"
#include "tests/graphs.h"
#include "train/loop.h"
#include "train/model.h"
#include "train/step_clock.h"

namespace mr {
namespace {

using Clock = StepClock::Clock;
Clock::time_point at_ms(double ms) {
  return Clock::time_point(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms)));
}
double ms(double s) { return s * 1e3; }

TEST(StepClock, PhasesPartitionTheStepByTheRules) {
  StepClock c(2);
  c.begin_epoch(at_ms(0));
  // Step 1 [0, 20): the first batch is drawn during [0, 3).
  c.begin_input(at_ms(0));
  c.end_input(at_ms(3));
  c.begin_step(at_ms(4));
  // Replica 0 busy [5, 15): staging [5, 6), an all-reduce [10, 13) that
  // nests a staging phase [11, 12) (exclusive: 1 ms input, 2 ms all-reduce).
  c.begin_replica(0, at_ms(5));
  c.begin_phase(0, StepPhase::input, at_ms(5));
  c.end_phase(0, StepPhase::input, at_ms(6));
  c.begin_phase(0, StepPhase::allreduce, at_ms(10));
  c.begin_phase(0, StepPhase::input, at_ms(11));
  c.end_phase(0, StepPhase::input, at_ms(12));
  c.end_phase(0, StepPhase::allreduce, at_ms(13));
  c.end_replica(0, at_ms(15));
  // Replica 1 busy [5, 9), no phases.
  c.begin_replica(1, at_ms(5));
  c.end_replica(1, at_ms(9));
  // The caller draws the next batch during [6, 17).
  c.begin_input(at_ms(6));
  c.end_input(at_ms(17));
  // Step 2 [20, 30): replica 0 busy [21, 29), replica 1 never runs.
  c.begin_step(at_ms(20));
  c.begin_replica(0, at_ms(21));
  c.end_replica(0, at_ms(29));
  c.end_epoch(at_ms(30));

  const auto& e = c.epoch();
  ASSERT_EQ(e.size(), 2u);
  // Replica 0, step 1: busy 10 = compute 6 + all-reduce 2 + staging 2; idle
  // 10: [0, 5) of which [0, 3) input, [15, 20) of which [15, 17) input.
  // Step 2: busy 8 compute, idle 2 host.
  EXPECT_EQ(e[0].steps, 2);
  EXPECT_NEAR(ms(e[0].wall), 30.0, 1e-6);
  EXPECT_NEAR(ms(e[0].compute), 6.0 + 8.0, 1e-6);
  EXPECT_NEAR(ms(e[0].allreduce), 2.0, 1e-6);
  EXPECT_NEAR(ms(e[0].input), 2.0 + 3.0 + 2.0, 1e-6);
  EXPECT_NEAR(ms(e[0].host), 2.0 + 3.0 + 2.0, 1e-6);
  // Replica 1, step 1: busy [5, 9) compute 4; idle [0, 5) with input 3, and
  // [9, 20) with input [9, 17) = 8. Step 2: idle 10, all host.
  EXPECT_NEAR(ms(e[1].wall), 30.0, 1e-6);
  EXPECT_NEAR(ms(e[1].compute), 4.0, 1e-6);
  EXPECT_NEAR(ms(e[1].allreduce), 0.0, 1e-6);
  EXPECT_NEAR(ms(e[1].input), 11.0, 1e-6);
  EXPECT_NEAR(ms(e[1].host), 5.0 + 10.0, 1e-6);
  for (const StepBreakdown& b : e)
    EXPECT_NEAR(b.compute + b.allreduce + b.input + b.host, b.wall, 1e-12);
}

TEST(StepClock, ResetsPerEpochAndRejectsBadNesting) {
  StepClock c(1);
  c.begin_epoch(at_ms(0));
  c.begin_step(at_ms(0));
  c.begin_replica(0, at_ms(1));
  c.begin_phase(0, StepPhase::allreduce, at_ms(1));
  // Only the innermost open phase can end.
  c.begin_phase(0, StepPhase::input, at_ms(2));
  EXPECT_THROW(c.end_phase(0, StepPhase::allreduce, at_ms(3)), Error);
  c.end_phase(0, StepPhase::input, at_ms(3));
  c.begin_phase(0, StepPhase::input, at_ms(3));
  c.begin_phase(0, StepPhase::input, at_ms(3));
  c.begin_phase(0, StepPhase::input, at_ms(3));
  EXPECT_THROW(c.begin_phase(0, StepPhase::input, at_ms(3)), Error);  // deeper than kMaxDepth
  // A replica that ends with phases open (it failed) closes them at its end.
  c.end_replica(0, at_ms(5));
  c.end_epoch(at_ms(6));
  ASSERT_EQ(c.epoch().size(), 1u);
  EXPECT_NEAR(ms(c.epoch()[0].allreduce), 1.0 + 0.0, 1e-6);  // [1, 2)
  EXPECT_NEAR(ms(c.epoch()[0].input), 1.0 + 2.0, 1e-6);      // [2, 3), [3, 5)
  EXPECT_NEAR(ms(c.epoch()[0].host), 1.0 + 1.0, 1e-6);       // [0, 1), [5, 6)

  // The next epoch starts from zero; the closed epoch stays readable until
  // the next one closes.
  c.begin_epoch(at_ms(100));
  EXPECT_EQ(c.epoch()[0].steps, 1);
  c.begin_step(at_ms(100));
  c.end_epoch(at_ms(101));
  EXPECT_EQ(c.epoch()[0].steps, 1);
  EXPECT_NEAR(ms(c.epoch()[0].wall), 1.0, 1e-6);
  EXPECT_NEAR(ms(c.epoch()[0].host), 1.0, 1e-6);
  EXPECT_EQ(c.epoch()[0].compute, 0.0);
  EXPECT_EQ(c.epoch()[0].allreduce, 0.0);
}

// A source that sleeps before each batch (a slow pipeline).
class SlowSource final : public BatchSource {
 public:
  SlowSource(std::shared_ptr<ArrayData> d, double sleep_ms)
      : inner_(std::move(d), 32, false, 0), sleep_ms_(sleep_ms) {}
  void reset(int64_t epoch) override { inner_.reset(epoch); }
  bool next(HostBatch& b) override {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(sleep_ms_));
    return inner_.next(b);
  }
  int64_t batches() const override { return inner_.batches(); }

 private:
  ArraySource inner_;
  double sleep_ms_;
};

// Hooks that sleep after each batch (a slow R callback).
class SlowHooks final : public LoopHooks {
 public:
  explicit SlowHooks(double sleep_ms) : sleep_ms_(sleep_ms) {}
  bool batch_events() const override { return true; }
  void on_batch_end(int64_t, const std::vector<double>&) override {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(sleep_ms_));
  }

 private:
  double sleep_ms_;
};

std::shared_ptr<ArrayData> blobs(int64_t n, int64_t in) {
  auto data = std::make_shared<ArrayData>();
  data->rows = n;
  data->widths = {in, 1};
  data->parts.resize(2);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < in; ++j)
      data->parts[0].push_back(std::sin(0.37f * static_cast<float>(i * in + j)));
    data->parts[1].push_back(static_cast<float>(i % 3));
  }
  return data;
}

std::shared_ptr<const Graph> mlp(int64_t in) {
  Initializer k;
  k.kind = Initializer::Kind::random_normal;
  k.b = 0.1;
  k.seed = 5;
  std::vector<GraphNode> nodes(3);
  nodes[0].name = "in";
  nodes[0].layer = make_input_layer(Shape{in});
  nodes[1].name = "hidden";
  nodes[1].layer = make_dense(64, Activation::relu, true, k, Initializer{});
  nodes[1].inputs = {0};
  nodes[2].name = "out";
  nodes[2].layer = make_dense(3, Activation::linear, true, k, Initializer{});
  nodes[2].inputs = {1};
  return std::make_shared<const Graph>(std::move(nodes), std::vector<int>{0}, std::vector<int>{2});
}

class StepClockTraining : public ::testing::TestWithParam<int> {};

TEST_P(StepClockTraining, PartsAddUpToTheEpochAndSleepsLandInTheirPart) {
  const int n = GetParam();
  std::vector<DeviceSpec> devs;
  for (int i = 0; i < n; ++i) devs.push_back(DeviceSpec{DeviceKind::cpu, i});
  Model m(mlp(20), devs, 1);
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::adam;
  c.loss.kind = LossKind::sparse_categorical_crossentropy;
  c.loss.from_logits = true;
  m.compile(c);
  const double sleep_ms = 2.0;
  const int64_t steps = 8;  // 256 rows / 32

  // A slow source: each batch costs at least sleep_ms of input time on every
  // replica (the replicas cannot start a step before its batch exists).
  SlowSource slow(blobs(256, 20), sleep_ms);
  LoopHooks none;
  auto t0 = Clock::now();
  LoopResult r = train_epoch(m, slow, 0, -1, none);
  double outer = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_EQ(r.batches, steps);
  std::vector<StepBreakdown> e = m.step_clock().epoch();
  ASSERT_EQ(static_cast<int>(e.size()), n);
  for (const StepBreakdown& b : e) {
    EXPECT_EQ(b.steps, steps);
    EXPECT_NEAR(b.compute + b.allreduce + b.input + b.host, b.wall, 1e-9 * b.wall);
    EXPECT_GT(b.compute, 0.0);
    EXPECT_LE(b.wall, outer);  // the epoch's clock runs inside train_epoch
    // 9 draws (8 batches and the end of the pass), each sleeping: the
    // replica was idle for all of that time it was not busy, so input time
    // (its idle part plus staging) covers the draws less its busy time.
    EXPECT_GE(b.input + b.compute + b.allreduce, 1e-3 * sleep_ms * 9 * 0.999);
    EXPECT_GT(b.input, 0.0);
    if (n == 1) EXPECT_EQ(b.allreduce, 0.0);
  }

  // Slow hooks: each step costs at least sleep_ms of host time.
  ArraySource fast(blobs(256, 20), 32, false, 0);
  SlowHooks hooks(sleep_ms);
  r = train_epoch(m, fast, 1, -1, hooks);
  ASSERT_EQ(r.batches, steps);
  e = m.step_clock().epoch();
  for (const StepBreakdown& b : e) {
    EXPECT_EQ(b.steps, steps);
    EXPECT_NEAR(b.compute + b.allreduce + b.input + b.host, b.wall, 1e-9 * b.wall);
    EXPECT_GE(b.host, 1e-3 * sleep_ms * steps * 0.999);
    if (n > 1) EXPECT_GT(b.allreduce, 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Replicas, StepClockTraining, ::testing::Values(1, 2));

TEST(StepClock, BackendMemoryCountsWhatItsAllocatorHolds) {
  Model m(mlp(20), {DeviceSpec{}}, 1);
  const Backend& be = m.replica_backend(0);
  const MemoryUse before = be.memory_use();
  // Parameters, gradients and slots of a 20-64-3 MLP: at least 3 x its floats.
  const int64_t params = 20 * 64 + 64 + 64 * 3 + 3;
  EXPECT_GE(before.in_use, static_cast<int64_t>(2 * params * sizeof(float)));
  EXPECT_GE(before.peak, before.in_use);
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::adam;
  c.loss.kind = LossKind::sparse_categorical_crossentropy;
  c.loss.from_logits = true;
  m.compile(c);  // Adam's two slots
  const MemoryUse after = be.memory_use();
  EXPECT_GE(after.in_use, before.in_use + static_cast<int64_t>(2 * params * sizeof(float)));
  EXPECT_GE(after.peak, after.in_use);
  EXPECT_EQ(after.device_used, -1);  // no device-wide figure for host memory
}

TEST(GpuUtilization, AMissingLibraryReadsAsNotAvailable) {
  const GpuUtilization none("libmirrored-no-such-nvml.so.1");
  EXPECT_FALSE(none.available());
  EXPECT_EQ(none.percent("0000:00:00.0"), -1);
  // The real soname: available only where a driver installed it; either
  // way an unknown bus id reads -1 and nothing throws.
  const GpuUtilization real;
  EXPECT_EQ(real.percent(""), -1);
  EXPECT_EQ(real.percent("not-a-bus-id"), -1);
}

TEST(StepClock, GpuReportHasDeviceMemoryAndUtilisation) {
  if (cuda_device_count() < 1) GTEST_SKIP() << "needs a CUDA device";
  Model m(mlp(20), {DeviceSpec{DeviceKind::cuda, 0}}, 1);
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::adam;
  c.loss.kind = LossKind::sparse_categorical_crossentropy;
  c.loss.from_logits = true;
  m.compile(c);
  ArraySource src(blobs(256, 20), 32, false, 0);
  LoopHooks none;
  ASSERT_EQ(train_epoch(m, src, 0, -1, none).batches, 8);
  const std::vector<ReplicaReport> rep = m.device_report();
  ASSERT_EQ(rep.size(), 1u);
  EXPECT_EQ(rep[0].device, "gpu:0");
  EXPECT_EQ(rep[0].time.steps, 8);
  EXPECT_NEAR(rep[0].time.compute + rep[0].time.allreduce + rep[0].time.input + rep[0].time.host,
              rep[0].time.wall, 1e-9 * rep[0].time.wall);
  EXPECT_GT(rep[0].memory.in_use, 0);
  EXPECT_GE(rep[0].memory.peak, rep[0].memory.in_use);
  EXPECT_GE(rep[0].memory.device_used, rep[0].memory.in_use);
  // NVML is present on a machine with a driver; its figure is a percentage.
  const GpuUtilization nvml;
  if (nvml.available()) {
    EXPECT_GE(rep[0].gpu_util, 0);
    EXPECT_LE(rep[0].gpu_util, 100);
  } else {
    EXPECT_EQ(rep[0].gpu_util, -1);
  }
}

TEST(StepClock, CpuReportHasNoGpuFigures) {
  Model m(mlp(20), {DeviceSpec{}, DeviceSpec{DeviceKind::cpu, 1}}, 1);
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::sgd;
  c.loss.kind = LossKind::sparse_categorical_crossentropy;
  c.loss.from_logits = true;
  m.compile(c);
  ArraySource src(blobs(100, 20), 32, false, 0);
  LoopHooks none;
  ASSERT_EQ(train_epoch(m, src, 0, -1, none).batches, 4);
  const std::vector<ReplicaReport> rep = m.device_report();
  ASSERT_EQ(rep.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(rep[r].device, "cpu:" + std::to_string(r));
    EXPECT_EQ(rep[r].time.steps, 4);
    EXPECT_EQ(rep[r].gpu_util, -1);
    EXPECT_EQ(rep[r].memory.device_used, -1);
    EXPECT_GT(rep[r].memory.in_use, 0);
    EXPECT_GE(rep[r].memory.peak, rep[r].memory.in_use);
  }
}

}  // namespace
}  // namespace mr
