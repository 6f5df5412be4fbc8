// Input staged ahead on the device (train/device_input.h, i14-devinput),
// with resident arrays (train/resident_input.h) turned off so that the
// copy-lane path runs for ArraySource too. On CPU replicas the copy lane is
// the replica's thread, so the same protocol
// (two slots per replica, staged two batches ahead, copied out at the start
// of each step) runs here: weights, logs and evaluation must be bit-identical
// to direct uploads, on 1, 2 and 4 replicas, with shuffling, sample weights,
// dropout (per-row masks) and a short last batch. On a GPU (skipped here;
// MIRRORED_TEST_CUDA=1 makes the skip a failure) the same comparison runs on
// the CUDA backend, and a timeline line reports whether the upload of batch
// i + 2 on the copy stream finished before step i's compute did.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "core/rng.h"
#include "data/array_source.h"
#include "tests/graphs.h"
#include "tests/test_util.h"
#include "train/loop.h"
#include "train/model.h"

namespace mr {
namespace {

constexpr int64_t kIn = 12;

std::shared_ptr<const Graph> small_net() {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{kIn}));
  l.push_back(make_dense(16, Activation::relu, true, glorot_uniform(3), Initializer{}));
  l.push_back(make_dropout(0.3, 9));
  l.push_back(make_dense(3, Activation::linear, true, glorot_uniform(4), Initializer{}));
  return chain(std::move(l));
}

// x (kIn floats), integer labels in 0..2 and, with `weights`, a positive
// sample weight per row.
std::shared_ptr<ArrayData> data(int64_t n, bool weights, uint32_t seed = 1) {
  const RandomStream rs(42, 0, seed);
  auto d = std::make_shared<ArrayData>();
  d->rows = n;
  d->widths = {kIn, 1};
  d->parts.resize(2);
  for (int64_t i = 0; i < n * kIn; ++i)
    d->parts[0].push_back(2.0f * rs.uniform(static_cast<uint64_t>(i)) - 1.0f);
  for (int64_t i = 0; i < n; ++i) d->parts[1].push_back(static_cast<float>((i * 7) % 3));
  if (weights) {
    d->widths.push_back(1);
    d->parts.emplace_back();
    for (int64_t i = 0; i < n; ++i)
      d->parts[2].push_back(0.25f + rs.uniform(static_cast<uint64_t>(n * kIn + i)));
  }
  return d;
}

CompileConfig config() {
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::adam;
  c.optimizer.learning_rate = 0.01;
  c.loss.kind = LossKind::sparse_categorical_crossentropy;
  c.loss.from_logits = true;
  MetricConfig acc;  // sparse categorical accuracy
  c.metrics.push_back(acc);
  MetricConfig wacc = acc;
  wacc.weighted = true;
  wacc.name = "weighted_accuracy";
  c.metrics.push_back(wacc);
  return c;
}

std::vector<DeviceSpec> devices(DeviceKind kind, int n) {
  std::vector<DeviceSpec> devs;
  for (int i = 0; i < n; ++i) devs.push_back(DeviceSpec{kind, i});
  return devs;
}

struct Trained {
  std::vector<std::vector<float>> params;  // per replica
  std::vector<std::vector<double>> logs;   // per epoch, then the evaluation's
  int64_t staged = 0, taken = 0;
  bool active = false;
};

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// `epochs` epochs of 103 rows in batches of 16 (the last one 7 rows), then
// an evaluation (batches of 24), under device input mode `mode`.
Trained train(const std::vector<DeviceSpec>& devs, int mode, int epochs, bool shuffle, bool weights,
              int64_t max_batches = -1) {
  Model m(small_net(), devs, 1);
  m.compile(config());
  m.set_device_input(mode);
  m.set_resident_input(0, 0);  // the copy lane, not resident arrays
  Trained out;
  out.active = m.device_input_active();
  ArraySource src(data(103, weights), 16, shuffle, 77);
  LoopHooks none;
  for (int e = 0; e < epochs; ++e)
    out.logs.push_back(train_epoch(m, src, e, max_batches, none).logs);
  ArraySource val(data(50, weights, 2), 24, false, 0);
  out.logs.push_back(evaluate(m, val, -1, none).logs);
  for (int r = 0; r < m.replicas(); ++r) out.params.push_back(m.get_params(r));
  out.staged = m.staged_inputs();
  out.taken = m.taken_inputs();
  return out;
}

void expect_same(const Trained& on, const Trained& off) {
  ASSERT_EQ(on.params.size(), off.params.size());
  for (size_t r = 0; r < on.params.size(); ++r)
    EXPECT_TRUE(bit_identical(on.params[r], off.params[r])) << "replica " << r;
  ASSERT_EQ(on.logs.size(), off.logs.size());
  for (size_t e = 0; e < on.logs.size(); ++e) EXPECT_EQ(on.logs[e], off.logs[e]) << "pass " << e;
}

class DeviceInputCpu : public ::testing::TestWithParam<int> {};

TEST_P(DeviceInputCpu, WeightsAndLogsBitIdenticalToDirectUploads) {
  const auto devs = devices(DeviceKind::cpu, GetParam());
  for (bool weights : {false, true}) {
    SCOPED_TRACE(weights ? "with sample weights" : "without sample weights");
    const Trained off = train(devs, 0, 3, true, weights);
    const Trained on = train(devs, 1, 3, true, weights);
    EXPECT_FALSE(off.active);
    EXPECT_TRUE(on.active);
    expect_same(on, off);
    // 3 epochs of 7 batches and 3 evaluation batches, on every replica; a
    // slot is read once per batch staged.
    EXPECT_EQ(off.staged, 0);
    EXPECT_EQ(on.staged, (3 * 7 + 3) * GetParam());
    EXPECT_EQ(on.taken, on.staged);
    // The weights moved (the comparison is not between two untrained models).
    const Trained none = train(devs, 1, 0, true, weights);
    EXPECT_FALSE(bit_identical(on.params[0], none.params[0]));
  }
}

TEST_P(DeviceInputCpu, StepsPerEpochStopAndNoShuffle) {
  const auto devs = devices(DeviceKind::cpu, GetParam());
  // max_batches cuts each pass after 3 batches: the loop draws (and stages)
  // no batch past the cut, like the direct loop, and the next pass starts
  // from its own first batch.
  const Trained off = train(devs, 0, 2, false, true, 3);
  const Trained on = train(devs, 1, 2, false, true, 3);
  expect_same(on, off);
  EXPECT_EQ(on.staged, (2 * 3 + 3) * GetParam());
  EXPECT_EQ(on.taken, on.staged);
}

// Hooks that ask training to stop after the second batch (TerminateOnNaN,
// EarlyStopping's stop_training): the slots staged ahead are dropped.
class StopAfterTwo final : public LoopHooks {
 public:
  bool batch_events() const override { return true; }
  void on_batch_end(int64_t batch, const std::vector<double>&) override { stop_ = batch >= 1; }
  bool stop_requested() const override { return stop_; }

 private:
  bool stop_ = false;
};

TEST_P(DeviceInputCpu, AStopLeavesNothingBehindForTheNextPass) {
  const auto devs = devices(DeviceKind::cpu, GetParam());
  std::vector<std::vector<float>> got;
  for (int mode : {0, 1}) {
    Model m(small_net(), devs, 1);
    m.compile(config());
    m.set_device_input(mode);
    m.set_resident_input(0, 0);  // the copy lane, not resident arrays
    ArraySource src(data(103, false), 16, true, 3);
    StopAfterTwo stop;
    LoopHooks none;
    EXPECT_EQ(train_epoch(m, src, 0, -1, stop).batches, 2);
    EXPECT_EQ(train_epoch(m, src, 1, -1, none).batches, 7);
    // Two steps read slots while four batches were staged (two ahead).
    if (mode == 1) EXPECT_EQ(m.staged_inputs() - m.taken_inputs(), 2 * GetParam());
    got.push_back(m.get_params());
  }
  EXPECT_TRUE(bit_identical(got[0], got[1]));
}

INSTANTIATE_TEST_SUITE_P(Replicas, DeviceInputCpu, ::testing::Values(1, 2, 4));

TEST(DeviceInputCpu, AutomaticIsOffOnCpuReplicas) {
  Model m(small_net(), devices(DeviceKind::cpu, 1), 1);
  EXPECT_EQ(m.device_input_mode(), -1);
  EXPECT_FALSE(m.device_input_active());
  m.set_device_input(1);
  EXPECT_TRUE(m.device_input_active());
  EXPECT_THROW(m.set_device_input(2), Error);
}

// Batches of growing size: the batch after next does not fit its slot, which
// then grows between steps (Model::stage_late_input).
class GrowingSource final : public BatchSource {
 public:
  explicit GrowingSource(std::shared_ptr<ArrayData> d) : d_(std::move(d)) {}
  void reset(int64_t) override { at_ = 0, k_ = 0; }
  bool next(HostBatch& b) override {
    static constexpr int64_t kSizes[] = {4, 4, 9, 16, 3, 20};
    if (k_ >= 6) return false;
    const int64_t rows = kSizes[k_++];
    b.rows = rows;
    b.parts = {HostComponent{d_->parts[0].data() + at_ * kIn, kIn},
               HostComponent{d_->parts[1].data() + at_, 1}};
    at_ += rows;
    return true;
  }
  int64_t batches() const override { return 6; }

 private:
  std::shared_ptr<ArrayData> d_;
  int64_t at_ = 0, k_ = 0;
};

TEST(DeviceInputCpu, BatchesLargerThanTheirSlotAreStagedAfterTheStep) {
  std::vector<std::vector<float>> got;
  for (int mode : {0, 1}) {
    Model m(small_net(), devices(DeviceKind::cpu, 2), 1);
    m.compile(config());
    m.set_device_input(mode);
    m.set_resident_input(0, 0);  // the copy lane, not resident arrays
    GrowingSource src(data(56, false));
    LoopHooks none;
    for (int e = 0; e < 2; ++e) ASSERT_EQ(train_epoch(m, src, e, -1, none).batches, 6);
    if (mode == 1) EXPECT_EQ(m.staged_inputs(), 2 * 6 * 2);
    got.push_back(m.get_params());
  }
  EXPECT_TRUE(bit_identical(got[0], got[1]));
}

// Review finding 2: a batch after next that outgrows its slot is staged
// only after the step's bookkeeping (finish_step() advances iterations and
// stages nothing), so a failure while staging it cannot leave an applied
// update uncounted; go_on = false drops it.
TEST(DeviceInputCpu, LateStagingRunsAfterTheStepsBookkeeping) {
  Model m(small_net(), devices(DeviceKind::cpu, 2), 1);
  m.compile(config());
  auto d = data(40, false);
  auto batch = [&](int64_t at, int64_t rows) {
    HostBatch b;
    b.rows = rows;
    b.parts = {HostComponent{d->parts[0].data() + at * kIn, kIn},
               HostComponent{d->parts[1].data() + at, 1}};
    return b;
  };
  const HostBatch b0 = batch(0, 4), b1 = batch(4, 4), b2 = batch(8, 12), b3 = batch(20, 12);
  m.stage_inputs(b0, &b1);
  const int64_t staged = m.staged_inputs();
  m.start_staged_step(true, 0, &b2);  // b2 outgrows slot 0
  EXPECT_TRUE(m.late_input_pending());
  m.finish_step();
  EXPECT_EQ(m.iterations(), 1);
  EXPECT_EQ(m.staged_inputs(), staged);  // nothing staged inside finish_step()
  EXPECT_THROW(m.start_staged_step(true, 1, nullptr), Error);  // b2 not staged yet
  m.stage_late_input(true);
  EXPECT_EQ(m.staged_inputs(), staged + 2);  // b2 on both replicas
  m.start_staged_step(true, 1, &b3);         // b3 outgrows slot 1
  m.finish_step();
  m.stage_late_input(false);  // the pass ends: dropped
  EXPECT_FALSE(m.late_input_pending());
  EXPECT_EQ(m.iterations(), 2);
  EXPECT_EQ(m.staged_inputs(), staged + 2);
  m.start_staged_step(true, 0, nullptr);  // b2, staged late
  m.finish_step();
  EXPECT_EQ(m.iterations(), 3);
}

// Batches of 4 rows; batch `odd` is malformed: `rows0` gives it no rows,
// otherwise its targets have 2 values per sample (the loss takes 1).
class OddBatchSource final : public BatchSource {
 public:
  OddBatchSource(std::shared_ptr<ArrayData> d, int64_t odd, bool rows0)
      : d_(std::move(d)), odd_(odd), rows0_(rows0) {}
  void reset(int64_t) override { k_ = 0; }
  bool next(HostBatch& b) override {
    if (k_ >= 6) return false;
    const int64_t at = 4 * k_;
    b.rows = k_ == odd_ && rows0_ ? 0 : 4;
    b.parts = {HostComponent{d_->parts[0].data() + at * kIn, kIn},
               HostComponent{d_->parts[1].data() + at, k_ == odd_ && !rows0_ ? 2 : 1}};
    ++k_;
    return true;
  }
  int64_t batches() const override { return 6; }

 private:
  std::shared_ptr<ArrayData> d_;
  int64_t odd_, k_ = 0;
  bool rows0_;
};

// Review finding 7: a malformed batch fails at its own step on the copy
// lane too (staged two steps ahead, its check is kept with the slot): the
// steps before it are applied, the error is the host path's.
TEST(DeviceInputCpu, AMalformedBatchFailsAtItsOwnStepAsOnTheHostPath) {
  for (bool rows0 : {false, true})
    for (int64_t odd : {0, 1, 2, 4}) {
      std::vector<std::vector<float>> params;
      std::vector<std::string> errors;
      for (int mode : {0, 1}) {
        Model m(small_net(), devices(DeviceKind::cpu, 2), 1);
        m.compile(config());
        m.set_device_input(mode);
        m.set_resident_input(0, 0);
        OddBatchSource src(data(24, false), odd, rows0);
        LoopHooks none;
        try {
          train_epoch(m, src, 0, -1, none);
          ADD_FAILURE() << "no error, mode " << mode;
        } catch (const Error& e) {
          errors.push_back(e.what());
        }
        EXPECT_EQ(m.iterations(), odd) << "mode " << mode << ", rows0 " << rows0;
        params.push_back(m.get_params());
        // The model stays usable: the next pass stages afresh.
        OddBatchSource good(data(24, false), 99, false);
        EXPECT_EQ(train_epoch(m, good, 1, -1, none).batches, 6);
      }
      EXPECT_EQ(errors[0], errors[1]) << "odd " << odd;
      EXPECT_TRUE(bit_identical(params[0], params[1])) << "odd " << odd;
    }
}

// Evaluation skips a batch of no rows on both paths (start_eval_step()).
TEST(DeviceInputCpu, EvaluationSkipsABatchOfNoRowsAsOnTheHostPath) {
  for (int64_t odd : {0, 1, 3, 5}) {
    std::vector<std::vector<double>> logs;
    for (int mode : {0, 1}) {
      Model m(small_net(), devices(DeviceKind::cpu, 2), 1);
      m.compile(config());
      m.set_device_input(mode);
      m.set_resident_input(0, 0);
      OddBatchSource src(data(24, false), odd, true);
      LoopHooks none;
      const LoopResult r = evaluate(m, src, -1, none);
      EXPECT_EQ(r.batches, 6);
      logs.push_back(r.logs);
      if (mode == 1) EXPECT_EQ(m.taken_inputs(), 5 * 2) << "odd " << odd;
    }
    EXPECT_EQ(logs[0], logs[1]) << "odd " << odd;
  }
}

TEST(DeviceInputCpu, StagedStepsAllocateNothing) {
  Model m(small_net(), devices(DeviceKind::cpu, 2), 1);
  m.compile(config());
  m.set_device_input(1);
  m.set_resident_input(0, 0);  // the copy lane, not resident arrays
  ArraySource src(data(103, true), 16, true, 5);
  LoopHooks none;
  train_epoch(m, src, 0, -1, none);  // sizes every buffer, the short batch's too
  const int64_t before =
      m.replica_backend(0).system_allocations() + m.replica_backend(1).system_allocations();
  for (int e = 1; e < 3; ++e) train_epoch(m, src, e, -1, none);
  EXPECT_EQ(m.replica_backend(0).system_allocations() + m.replica_backend(1).system_allocations(),
            before);
}

TEST(DeviceInputCpu, AnErrorInAStagedStepIsRethrownAndTheModelStaysUsable) {
  Model m(small_net(), devices(DeviceKind::cpu, 2), 1);
  m.compile(config());
  m.set_device_input(1);
  m.set_resident_input(0, 0);  // the copy lane, not resident arrays
  m.inject_fault(1, 3, Model::Fault::error);
  ArraySource src(data(103, false), 16, false, 0);
  LoopHooks none;
  EXPECT_THROW(train_epoch(m, src, 0, -1, none), Error);
  // The next pass stages afresh (no slot left half-read) and predict() reads
  // host data again.
  m.inject_fault(1, 0, Model::Fault::none);
  EXPECT_EQ(train_epoch(m, src, 1, -1, none).batches, 7);
  std::vector<std::vector<float>> outs;
  ArraySource x(data(10, false), 4, false, 0);
  EXPECT_EQ(predict(m, x, -1, none, outs).batches, 3);
  EXPECT_EQ(outs[0].size(), 30u);
}

// Backend::upload_on: an upload on the copy lane, joined to compute through
// an event, then a compute-lane copy; the host buffer is reused at once (the
// contract: upload_on has read it when it returns). Several uploads larger
// than one pinned slot and the ring's 8 slots go through it in chunks.
void check_upload_on(Backend& be) {
  const size_t n = 300000;
  be.reserve_staging(64 * 1024 * sizeof(float));
  std::vector<float> host(n), back(n);
  auto staged = be.allocate(n * sizeof(float));
  auto out = be.allocate(n * sizeof(float));
  auto filled = be.create_event();
  for (int round = 0; round < 12; ++round) {
    for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i % 977) * 0.5f + round;
    const size_t bytes = (round % 2 == 0 ? 1000 + round : n) * sizeof(float);
    be.upload_on(Lane::copy, staged.get(), host.data(), bytes);
    std::fill(host.begin(), host.end(), -1.0f);  // the source may be reused now
    be.record_event(*filled, Lane::copy);
    be.wait_event(*filled, Lane::compute);
    be.copy_on(Lane::compute, out.get(), staged.get(), bytes);
    be.download(back.data(), out.get(), bytes);
    for (size_t i = 0; i < bytes / sizeof(float); ++i)
      ASSERT_EQ(back[i], static_cast<float>(i % 977) * 0.5f + round)
          << "round " << round << ", " << i;
  }
  // On the compute lane it is upload().
  for (size_t i = 0; i < 10; ++i) host[i] = static_cast<float>(i);
  be.upload_on(Lane::compute, out.get(), host.data(), 10 * sizeof(float));
  be.download(back.data(), out.get(), 10 * sizeof(float));
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(back[i], static_cast<float>(i));
}

TEST(BackendUploadOn, CpuCopiesAtOnce) {
  auto be = make_cpu_backend(0, 1);
  check_upload_on(*be);
}

TEST(BackendUploadOn, GpuCopyStreamJoinedByEvents) {
  MR_REQUIRE_GPUS(1);
  auto be = make_cuda_backend(0, 0);
  check_upload_on(*be);
}

// Review finding 5: blocks freed into a backend's cache count as free for
// the resident budget (ResidentInput::free_bytes); the CPU caches nothing.
TEST(BackendCachedFreeBytes, CpuHasNone) {
  auto be = make_cpu_backend(0, 1);
  { auto b = be->allocate(size_t{4} << 20); }
  EXPECT_EQ(be->cached_free_bytes(), 0);
}

TEST(BackendCachedFreeBytes, GpuCountsReleasedBlocks) {
  MR_REQUIRE_GPUS(1);
  auto be = make_cuda_backend(0, 0);
  auto b = be->allocate((size_t{3} << 20) + 5);  // size class 4 MiB
  const int64_t live = be->cached_free_bytes();
  b.reset();
  EXPECT_EQ(be->cached_free_bytes(), live + (int64_t{4} << 20));
  auto again = be->allocate(size_t{4} << 20);  // takes the cached block
  EXPECT_EQ(be->cached_free_bytes(), live);
}

// The step clock (train/step_clock.h) still partitions each step: staging
// (the slot's copy-out and the upload of the batch after next) is the
// replicas' input phase, for the copy lane and for resident arrays alike.
TEST(DeviceInputCpu, StagingAndGatheringAreInputTime) {
  for (int resident : {0, 1}) {
    Model m(small_net(), devices(DeviceKind::cpu, 2), 1);
    m.compile(config());
    m.set_device_input(1);
    m.set_resident_input(resident, int64_t{1} << 30);
    ArraySource src(data(103, true), 16, true, 5);
    LoopHooks none;
    ASSERT_EQ(train_epoch(m, src, 0, -1, none).batches, 7);
    EXPECT_EQ(m.last_input_path(),
              resident ? Model::InputPath::resident : Model::InputPath::copy_lane);
    for (const StepBreakdown& b : m.step_clock().epoch()) {
      EXPECT_EQ(b.steps, 7);
      EXPECT_NEAR(b.compute + b.allreduce + b.input + b.host, b.wall, 1e-9 * b.wall);
      EXPECT_GT(b.input, 0.0);
      EXPECT_GT(b.compute, 0.0);
    }
  }
}

// ---- GPU (skipped without one) ------------------------------------------------

TEST(GpuDeviceInput, ThreeEpochsBitIdenticalToDirectUploads) {
  MR_REQUIRE_GPUS(1);
  const auto devs = devices(DeviceKind::cuda, 1);
  const Trained off = train(devs, 0, 3, true, true);
  const Trained on = train(devs, -1, 3, true, true);  // automatic: on for a GPU
  EXPECT_FALSE(off.active);
  EXPECT_TRUE(on.active);
  expect_same(on, off);
  EXPECT_EQ(on.staged, 3 * 7 + 3);
}

// Review finding 1 on a GPU: slots that grow between steps (late staging,
// a new allocation zeroed on the compute stream, or a cached block still
// read there) hold batch i + 2's bytes when step i + 2 reads them.
TEST(GpuDeviceInput, GrowingSlotsBitIdenticalToDirectUploads) {
  MR_REQUIRE_GPUS(1);
  std::vector<std::vector<float>> got;
  for (int mode : {0, 1}) {
    Model m(small_net(), devices(DeviceKind::cuda, 1), 1);
    m.compile(config());
    m.set_device_input(mode);
    m.set_resident_input(0, 0);
    GrowingSource src(data(56, false));
    LoopHooks none;
    for (int e = 0; e < 3; ++e) ASSERT_EQ(train_epoch(m, src, e, -1, none).batches, 6);
    got.push_back(m.get_params());
  }
  EXPECT_TRUE(bit_identical(got[0], got[1]));
}

TEST(GpuDeviceInput, CopyStreamUploadOverlapsTheStep) {
  MR_REQUIRE_GPUS(1);
  // 784 -> 4096 -> 4096 -> 4096 -> 10 at batch 2048: step i's compute
  // (about 450 GFLOP) takes milliseconds, the upload of batch i + 2 (6.4 MB
  // on the copy stream) a fraction of one. After each step's host job
  // returns, the probe polls the slot's "filled" event and a marker queued
  // after the step's compute.
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{784}));
  for (int k = 0; k < 3; ++k)
    l.push_back(make_dense(4096, Activation::relu, true, glorot_uniform(5 + k), Initializer{}));
  l.push_back(make_dense(10, Activation::linear, true, glorot_uniform(9), Initializer{}));
  Model m(chain(std::move(l)), devices(DeviceKind::cuda, 1), 1);
  CompileConfig c;
  c.loss.from_logits = true;
  m.compile(c);
  m.set_device_input(1);
  m.set_resident_input(0, 0);  // the copy lane, not resident arrays
  const int64_t rows = 2048, steps = 6;
  const RandomStream rs(7, 0, 0);
  std::vector<std::vector<float>> xs(steps + 2), ys(steps + 2);
  std::vector<HostBatch> b(steps + 2);
  for (size_t s = 0; s < b.size(); ++s) {
    xs[s].resize(static_cast<size_t>(rows * 784));
    for (size_t i = 0; i < xs[s].size(); ++i) xs[s][i] = rs.uniform(i + s * 7919);
    for (int64_t r = 0; r < rows; ++r) ys[s].push_back(static_cast<float>((r + s) % 10));
    b[s].rows = rows;
    b[s].parts = {HostComponent{xs[s].data(), 784}, HostComponent{ys[s].data(), 1}};
  }
  m.stage_inputs(b[0], &b[1]);
  int first = 0;
  for (int64_t i = 0; i < steps; ++i) {
    const int slot = static_cast<int>(i % 2);
    m.start_staged_step(true, slot, &b[static_cast<size_t>(i + 2)]);
    m.finish_step();
    const DeviceInput::Order o = m.device_input_order(0, slot);
    if (o == DeviceInput::Order::upload_first) ++first;
    std::printf("[ timeline ] device input, step %lld: the upload of batch %lld %s\n",
                static_cast<long long>(i), static_cast<long long>(i + 2),
                o == DeviceInput::Order::upload_first    ? "finished before the step's compute"
                : o == DeviceInput::Order::compute_first ? "finished after the step's compute"
                                                         : "and the step finished between polls");
  }
  // The first step also runs cuBLAS's lazy set-up: the others must overlap.
  EXPECT_GE(first, steps - 1);
}

}  // namespace
}  // namespace mr
