// Datasets resident on the device (train/resident_input.h, i14-devinput):
// fit(x, y)'s arrays gathered on the device by row numbers in ArraySource's
// own (shuffled) order give the weights, logs and evaluation of streaming
// them from the host, bit for bit, on 1 and 2 CPU replicas; a budget too
// small for the data falls back to streaming; the steps allocate nothing.
// On a GPU (skipped here) resident data and the copy lane against the plain
// CUDA path.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "core/rng.h"
#include "data/array_source.h"
#include "tests/graphs.h"
#include "tests/test_util.h"
#include "train/loop.h"
#include "train/model.h"

namespace mr {
namespace {

constexpr int64_t kIn = 10;

std::shared_ptr<const Graph> net() {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{kIn}));
  l.push_back(make_dense(16, Activation::relu, true, glorot_uniform(3), Initializer{}));
  l.push_back(make_dropout(0.25, 4));
  l.push_back(make_dense(4, Activation::linear, true, glorot_uniform(5), Initializer{}));
  return chain(std::move(l));
}

std::shared_ptr<const ArrayData> arrays(int64_t n, bool weights, uint32_t seed) {
  const RandomStream rs(9, 0, seed);
  auto d = std::make_shared<ArrayData>();
  d->rows = n;
  d->widths = {kIn, 1};
  d->parts.resize(2);
  for (int64_t i = 0; i < n * kIn; ++i) d->parts[0].push_back(rs.uniform(static_cast<uint64_t>(i)));
  for (int64_t i = 0; i < n; ++i) d->parts[1].push_back(static_cast<float>((i * 5) % 4));
  if (weights) {
    d->widths.push_back(1);
    d->parts.emplace_back();
    for (int64_t i = 0; i < n; ++i)
      d->parts[2].push_back(0.5f + rs.uniform(static_cast<uint64_t>(n * kIn + i)));
  }
  return d;
}

struct Result {
  std::vector<float> params;
  std::vector<std::vector<double>> logs;
  int64_t gathered = 0, resident = 0;
};

// 3 epochs over 101 rows in batches of 16 (the last one 5 rows), shuffled,
// each followed by an evaluation of 37 other rows (batches of 8): the
// training and the validation arrays both resident when the budget allows.
Result run(int replicas, int resident, int64_t budget, bool weights, int device_input = 0,
           DeviceKind kind = DeviceKind::cpu) {
  std::vector<DeviceSpec> devs;
  for (int i = 0; i < replicas; ++i) devs.push_back(DeviceSpec{kind, i});
  Model m(net(), devs, 1);
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::adam;
  c.optimizer.learning_rate = 0.02;
  c.loss.from_logits = true;
  MetricConfig acc;
  c.metrics.push_back(acc);
  acc.weighted = true;
  acc.name = "weighted_accuracy";
  c.metrics.push_back(acc);
  m.compile(c);
  m.set_resident_input(resident, budget);
  m.set_device_input(device_input);
  ArraySource train(arrays(101, weights, 1), 16, true, 21);
  ArraySource val(arrays(37, weights, 2), 8, false, 0);
  LoopHooks none;
  Result out;
  for (int e = 0; e < 3; ++e) {
    out.logs.push_back(train_epoch(m, train, e, -1, none).logs);
    out.logs.push_back(evaluate(m, val, -1, none).logs);
  }
  out.params = m.get_params();
  for (int r = 1; r < replicas; ++r) EXPECT_EQ(m.get_params(r), out.params);
  out.gathered = m.gathered_inputs();
  out.resident = m.resident_bytes();
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class ResidentCpu : public ::testing::TestWithParam<int> {};

TEST_P(ResidentCpu, GatheredOnTheDeviceBitIdenticalToStreaming) {
  const int n = GetParam();
  for (bool weights : {false, true}) {
    SCOPED_TRACE(weights ? "with sample weights" : "without sample weights");
    const Result off = run(n, 0, int64_t{1} << 30, weights);
    const Result on = run(n, 1, int64_t{1} << 30, weights);
    EXPECT_TRUE(same_bits(on.params, off.params));
    EXPECT_EQ(on.logs, off.logs);
    EXPECT_EQ(off.gathered, 0);
    // 3 x (7 training + 5 evaluation batches), one index upload per replica.
    EXPECT_EQ(on.gathered, 3 * (7 + 5) * n);
    const int64_t parts = weights ? kIn + 2 : kIn + 1;
    EXPECT_EQ(on.resident, (101 + 37) * parts * static_cast<int64_t>(sizeof(float)));
    // Resident data and the copy lane together: resident wins, same numbers.
    const Result both = run(n, 1, int64_t{1} << 30, weights, 1);
    EXPECT_TRUE(same_bits(both.params, off.params));
    EXPECT_EQ(both.gathered, on.gathered);
  }
}

TEST_P(ResidentCpu, OverBudgetFallsBackToStreaming) {
  const int n = GetParam();
  const Result off = run(n, 0, int64_t{1} << 30, true);
  // Room for the validation arrays (37 x 12 floats) but not the training ones.
  const Result small = run(n, 1, 37 * 12 * 4, true);
  EXPECT_TRUE(same_bits(small.params, off.params));
  EXPECT_EQ(small.logs, off.logs);
  EXPECT_EQ(small.resident, 37 * 12 * 4);
  EXPECT_EQ(small.gathered, 3 * 5 * n);  // evaluation batches only
  const Result none = run(n, 1, 0, true);
  EXPECT_TRUE(same_bits(none.params, off.params));
  EXPECT_EQ(none.gathered, 0);
}

// Review finding 4: the validation arrays do not evict the training arrays
// of the same call (which would re-upload both every epoch): when both do
// not fit, the training arrays stay and the validation arrays stream.
TEST_P(ResidentCpu, ValidationDataNeverEvictTheTrainingData) {
  const int n = GetParam();
  const Result off = run(n, 0, int64_t{1} << 30, true);
  // Room for the training arrays (101 x 12 floats), not beside the others.
  const Result one = run(n, 1, 101 * 12 * 4 + 100, true);
  EXPECT_TRUE(same_bits(one.params, off.params));
  EXPECT_EQ(one.logs, off.logs);
  EXPECT_EQ(one.resident, 101 * 12 * 4);
  EXPECT_EQ(one.gathered, 3 * 7 * n);  // training batches only
}

INSTANTIATE_TEST_SUITE_P(Replicas, ResidentCpu, ::testing::Values(1, 2));

TEST(ResidentCpu, StepsAllocateNothing) {
  Model m(net(), {DeviceSpec{DeviceKind::cpu, 0}, DeviceSpec{DeviceKind::cpu, 1}}, 1);
  CompileConfig c;
  c.loss.from_logits = true;
  m.compile(c);
  m.set_resident_input(1, int64_t{1} << 30);
  ArraySource src(arrays(101, true, 1), 16, true, 3);
  LoopHooks none;
  train_epoch(m, src, 0, -1, none);
  const int64_t before =
      m.replica_backend(0).system_allocations() + m.replica_backend(1).system_allocations();
  for (int e = 1; e < 3; ++e) train_epoch(m, src, e, -1, none);
  EXPECT_EQ(m.replica_backend(0).system_allocations() + m.replica_backend(1).system_allocations(),
            before);
  EXPECT_GT(m.gathered_inputs(), 0);
  EXPECT_EQ(m.resident_bytes(), 101 * 12 * 4);
  // The end of fit(): nothing stays resident; the next pass attaches again.
  m.release_resident_input();
  EXPECT_EQ(m.resident_bytes(), 0);
  train_epoch(m, src, 3, -1, none);
  EXPECT_EQ(m.resident_bytes(), 101 * 12 * 4);
}

// Review finding 9: only a loss whose per-batch arguments read the targets
// (ignore_class, the hinge losses) gathers them on the host each resident
// step; with and without, resident steps match streaming bit for bit.
TEST(ResidentCpu, LossesThatReadTheTargetsMatchStreaming) {
  for (int variant = 0; variant < 3; ++variant) {
    std::vector<std::vector<float>> params;
    std::vector<std::vector<double>> logs;
    for (int resident : {0, 1}) {
      Model m(net(), {DeviceSpec{DeviceKind::cpu, 0}, DeviceSpec{DeviceKind::cpu, 1}}, 1);
      CompileConfig c;
      c.loss.from_logits = variant != 2;
      if (variant == 1) {  // labels 0..3, class 2 ignored
        c.loss.has_ignore = true;
        c.loss.ignore_class = 2;
      }
      if (variant == 2) c.loss.kind = LossKind::hinge;  // 4 targets per row
      EXPECT_EQ(loss_reads_targets(c.loss), variant != 0);
      m.compile(c);
      m.set_resident_input(resident, int64_t{1} << 30);
      auto d = std::const_pointer_cast<ArrayData>(arrays(101, false, 1));
      if (variant == 2) {  // one-hot {0, 1} targets
        std::vector<float> y;
        for (int64_t i = 0; i < d->rows; ++i)
          for (int j = 0; j < 4; ++j) y.push_back(j == (i * 5) % 4 ? 1.0f : 0.0f);
        d->parts[1] = y;
        d->widths[1] = 4;
      }
      ArraySource src(d, 16, true, 8);
      LoopHooks none;
      for (int e = 0; e < 2; ++e) logs.push_back(train_epoch(m, src, e, -1, none).logs);
      EXPECT_EQ(m.gathered_inputs() > 0, resident == 1);
      params.push_back(m.get_params());
    }
    EXPECT_TRUE(same_bits(params[0], params[1])) << "variant " << variant;
    EXPECT_EQ(logs[0], logs[2]) << "variant " << variant;
    EXPECT_EQ(logs[1], logs[3]) << "variant " << variant;
  }
}

TEST(ResidentCpu, ModeAndBudgetAreChecked) {
  Model m(net(), {DeviceSpec{DeviceKind::cpu, 0}}, 1);
  EXPECT_EQ(m.resident_mode(), -1);
  EXPECT_EQ(m.resident_budget(), int64_t{1} << 30);
  EXPECT_THROW(m.set_resident_input(3, 0), Error);
  EXPECT_THROW(m.set_resident_input(1, -1), Error);
}

TEST(GpuResidentInput, ThreeEpochsWithResidentDataAndCopyLaneBitIdenticalToPlainCuda) {
  MR_REQUIRE_GPUS(1);
  const Result plain = run(1, 0, int64_t{1} << 30, true, 0, DeviceKind::cuda);
  const Result staged = run(1, 0, int64_t{1} << 30, true, 1, DeviceKind::cuda);
  const Result resident = run(1, -1, int64_t{1} << 30, true, -1, DeviceKind::cuda);
  EXPECT_TRUE(same_bits(staged.params, plain.params));
  EXPECT_EQ(staged.logs, plain.logs);
  EXPECT_TRUE(same_bits(resident.params, plain.params));
  EXPECT_EQ(resident.logs, plain.logs);
  EXPECT_EQ(resident.gathered, 3 * (7 + 5));  // automatic: resident on a GPU
}

}  // namespace
}  // namespace mr
