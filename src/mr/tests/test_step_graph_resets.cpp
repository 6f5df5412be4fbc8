// When captured step graphs must go (train/step_graphs.h): a capture whose
// body throws leaves no partial graph behind (the backend's graph_reset()),
// and graphs a backend dropped (an aborting NCCL reset calls graph_reset() on
// every backend it served: dist/comm_nccl.cu) are never replayed: the step
// runs eagerly and captures again. The policy runs on the CPU against a
// recording backend; the GPU tests (skipped without a device, failures under
// MIRRORED_TEST_CUDA=1) abort a real NCCL communicator under a captured
// graph, and train under dynamic loss scaling with graphs on and off.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "core/rng.h"
#include "dist/communicator.h"
#include "tests/graphs.h"
#include "tests/test_util.h"
#include "train/model.h"
#include "train/step_graphs.h"

namespace mr {
namespace {

// A CPU backend whose graph calls succeed and are counted: slot 0 holds a
// graph from a successful capture_end until graph_reset().
class RecordingBackend final : public CpuBackend {
 public:
  RecordingBackend() : CpuBackend(0, 1) {}
  bool graph_capture_begin() override {
    ++begins;
    return true;
  }
  bool graph_capture_end(int) override {
    ++ends;
    have_graph = true;
    ++graph_id;
    return true;
  }
  bool graph_launch(int) override {
    if (!have_graph) return false;
    launched.push_back(graph_id);
    return true;
  }
  void graph_reset() override {
    ++resets;
    have_graph = false;
  }
  int begins = 0, ends = 0, resets = 0;
  int graph_id = 0;  // the graph now in slot 0 (one per capture)
  bool have_graph = false;
  std::vector<int> launched;  // graph ids, in launch order
};

StepGraphKey key(int64_t rows) {
  StepGraphKey k;
  k.global_rows = rows;
  k.parts = 2;
  k.loss.push_back(LossParams{});
  return k;
}

TEST(StepGraphResets, ABodyThatThrowsMidCaptureLeavesNoPartialGraph) {
  RecordingBackend be;
  StepGraphs g(1);
  g.decide(key(64), true);
  ASSERT_EQ(g.decide(key(64), true), StepMode::capture);
  int ran = 0;
  g.run(0, be, StepMode::capture, [&] {
    if (++ran == 1) throw std::runtime_error("fails while recorded");
  });
  EXPECT_EQ(be.ends, 1) << "the capture was not ended after its body threw";
  EXPECT_EQ(be.resets, 1) << "the partial graph of the throwing capture was kept";
  EXPECT_FALSE(be.have_graph);
  EXPECT_EQ(ran, 2) << "the step did not run eagerly after the failed capture";
  EXPECT_TRUE(be.launched.empty()) << "the partial graph was launched";
  EXPECT_EQ(g.decide(key(64), true), StepMode::eager);
  EXPECT_TRUE(g.stats().failed);
}

TEST(StepGraphResets, AGraphTheBackendDroppedIsNeverReplayed) {
  RecordingBackend be;
  StepGraphs g(1);
  int ran = 0;
  auto step = [&] { g.run(0, be, g.decide(key(64), true), [&] { ++ran; }); };
  step();  // warm-up, eager
  step();  // captured (graph 1), launched
  step();  // replays graph 1
  ASSERT_EQ(be.launched, (std::vector<int>{1, 1}));
  // What an aborting NCCL reset does to every backend it served.
  be.graph_reset();
  const int before = ran;
  step();  // decided "replay", but graph 1 is gone: eager
  EXPECT_EQ(be.launched, (std::vector<int>{1, 1})) << "a dropped graph was launched";
  EXPECT_EQ(ran, before + 1) << "the step whose graph was dropped did not run eagerly";
  step();  // captured again (graph 2), launched
  step();  // replays graph 2
  EXPECT_EQ(be.launched, (std::vector<int>{1, 1, 2, 2}))
      << "after the reset the step should capture a new graph and replay only that one";
  EXPECT_FALSE(g.stats().failed);
  EXPECT_EQ(g.stats().captures, 2);
}

// ---- GPU ----

// A graph holding a collective of a 1-rank NCCL communicator: an aborting
// reset (what ReplicaSet::wait does after a failure or Ctrl-C) must drop it,
// or the next replay would run kernels of the aborted communicator.
TEST(StepGraphResetsGpu, AnAbortingNcclResetDropsTheGraphsOfItsBackends) {
  MR_REQUIRE_GPUS(1);
  if (!built_with_nccl()) {
    if (gpu_required()) FAIL() << "MIRRORED_TEST_CUDA=1 but this build has no NCCL";
    GTEST_SKIP() << "built without NCCL";
  }
  auto be = make_cuda_backend(0, 0);
  auto comm = make_nccl_communicator({0}, 60.0);
  auto buf = be->allocate(1024 * sizeof(float));
  auto* p = static_cast<float*>(buf.get());
  be->fill(1024, p, 1.0f);
  ASSERT_TRUE(be->graph_capture_begin());
  comm->all_reduce_sum(0, *be, p, 1024);
  ASSERT_TRUE(be->graph_capture_end(0)) << "capturing an NCCL all-reduce failed";
  ASSERT_TRUE(be->graph_launch(0));
  be->synchronize();
  comm->abort("test: a replica failed");
  comm->reset();
  EXPECT_FALSE(be->graph_launch(0))
      << "a graph captured with the aborted NCCL communicator is still launchable";
  be->synchronize();
  // The fresh communicator works, eagerly and captured again.
  comm->all_reduce_sum(0, *be, p, 1024);
  ASSERT_TRUE(be->graph_capture_begin());
  comm->all_reduce_sum(0, *be, p, 1024);
  ASSERT_TRUE(be->graph_capture_end(0));
  EXPECT_TRUE(be->graph_launch(0));
  std::vector<float> h(1024);
  be->download(h.data(), p, h.size() * sizeof(float));
  EXPECT_EQ(h[0], 1.0f);
}

struct Data {
  std::vector<float> x, y;
  HostBatch batch;
};

Data data(int64_t rows, uint32_t seed) {
  const RandomStream rs(17, 0, seed);
  Data d;
  d.x.resize(static_cast<size_t>(rows * 784));
  for (size_t i = 0; i < d.x.size(); ++i) d.x[i] = rs.uniform(i);
  for (int64_t r = 0; r < rows; ++r) d.y.push_back(static_cast<float>((r + seed) % 10));
  d.batch.rows = rows;
  d.batch.parts = {HostComponent{d.x.data(), 784}, HostComponent{d.y.data(), 1}};
  return d;
}

struct Trained {
  std::vector<float> params;
  StepGraphStats stats;
  LossScaleState scale;
  int64_t downloads = 0;  // by the training steps, before the state was read
};

// Dynamic loss scaling (scale 2^15, doubled every 2 finite steps): the loss
// gradients read the scale from the step block on the device, so the steps
// are captured and replayed, and give the eager weights bit for bit.
Trained train_scaled(std::vector<DeviceSpec> devs, bool graphs, int steps) {
  Model m(vignette_mlp(5), std::move(devs), PlacementOptions{});
  CompileConfig c;
  c.loss.from_logits = true;
  c.loss_scale.dynamic = true;
  c.loss_scale.dynamic_growth_steps = 2;
  m.compile(c);
  m.set_cuda_graphs(graphs);
  const int64_t before = m.replica_backend(0).downloads();
  for (int s = 0; s < steps; ++s) m.train_step(data(64, static_cast<uint32_t>(s)).batch);
  Trained t;
  t.downloads = m.replica_backend(0).downloads() - before;
  t.scale = m.loss_scale_state();
  t.params = m.get_params();
  t.stats = m.cuda_graph_stats();
  return t;
}

TEST(StepGraphResetsGpu, DynamicLossScalingStepsReplayBitForBit) {
  MR_REQUIRE_GPUS(1);
  const DeviceSpec gpu{DeviceKind::cuda, 0};
  const Trained eager = train_scaled({gpu}, false, 8);
  const Trained graph = train_scaled({gpu}, true, 8);
  EXPECT_GT(graph.stats.replays, 0)
      << "dynamic loss scaling still keeps the step from a CUDA graph (captures "
      << graph.stats.captures << ", failed " << graph.stats.failed << ")";
  EXPECT_FALSE(graph.stats.failed);
  EXPECT_EQ(graph.scale.scale, eager.scale.scale) << "the loss scale moved differently";
  EXPECT_EQ(graph.scale.skipped, eager.scale.skipped);
  EXPECT_EQ(graph.params, eager.params) << "replayed loss-scaled steps differ from eager ones";
  EXPECT_EQ(graph.downloads, 0) << "the host read the device between loss-scaled steps (a "
                                   "device sync per step)";
  EXPECT_EQ(eager.downloads, 0) << "the host read the device between eager loss-scaled steps";
  // The same numbers as a CPU replica (the GPU's kernels differ in rounding).
  const Trained cpu = train_scaled({DeviceSpec{DeviceKind::cpu, 0}}, false, 8);
  EXPECT_EQ(cpu.scale.scale, graph.scale.scale);
  ASSERT_EQ(cpu.params.size(), graph.params.size());
  for (size_t i = 0; i < cpu.params.size(); ++i)
    ASSERT_NEAR(graph.params[i], cpu.params[i], 1e-4) << "parameter " << i;
}

}  // namespace
}  // namespace mr
