// Training on GPUs against training on the CPU: 5 Adam steps of the
// vignette's model (784-256-256-10, with a dropout layer so that the Philox
// masks are exercised) must give weights within 1e-4 (relative, RMS over all
// weights) of one CPU replica; also the communicators: a 1-rank NCCL
// all-reduce, 2 logical GPUs on one physical GPU through the peer-copy
// fallback and through host staging, and NCCL over 2+ physical GPUs when the
// machine has them. The host-staged communicator also runs on CPU replicas,
// so that its logic is tested on every machine.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "core/rng.h"
#include "dist/communicator.h"
#include "tests/graphs.h"
#include "tests/test_util.h"
#include "tests/vignette_steps.h"
#include "train/model.h"

namespace mr {
namespace {

struct Data {
  int64_t rows;
  std::vector<float> x, y;
};

Data batch_data(int64_t rows, uint32_t seed) {
  const RandomStream rs(777, 0, seed);
  Data d{rows, std::vector<float>(static_cast<size_t>(rows * 784)), {}};
  for (size_t i = 0; i < d.x.size(); ++i) d.x[i] = rs.uniform(i);
  for (int64_t r = 0; r < rows; ++r) d.y.push_back(static_cast<float>(r % 10));
  return d;
}

// Weights after 5 steps (batches of 64, the last one 37 rows: uneven slices).
std::vector<float> train5(std::vector<DeviceSpec> devs, const PlacementOptions& o,
                          std::string* comm = nullptr, std::string* note = nullptr) {
  Model m(vignette_mlp(11, 0.2, 5), std::move(devs), o);
  CompileConfig c;
  c.loss.from_logits = true;
  c.metrics.push_back(MetricConfig{});
  m.compile(c);
  train_vignette_steps(m, 5);
  for (int r = 1; r < m.replicas(); ++r)
    EXPECT_EQ(m.get_params(r), m.get_params(0)) << "replica " << r << " differs";
  const std::vector<double> metrics = m.read_metrics();
  EXPECT_TRUE(std::isfinite(metrics[0]));
  if (comm != nullptr) *comm = m.communicator_name();
  if (note != nullptr) *note = m.communicator_note();
  return m.get_params();
}

const std::vector<float>& cpu_reference() {
  static const std::vector<float> ref =
      train5({DeviceSpec{DeviceKind::cpu, 0}}, PlacementOptions{});
  return ref;
}

DeviceSpec gpu(int index, int ordinal = -1) {
  DeviceSpec d{DeviceKind::cuda, index};
  d.ordinal = ordinal;
  return d;
}

TEST(Staged, HostStagedAllReduceOnCpuReplicasEqualsTheThreadAllReduce) {
  PlacementOptions staged;
  staged.cross_device_ops = "reduce_to_one_device";
  std::string name;
  const std::vector<DeviceSpec> two{DeviceSpec{DeviceKind::cpu, 0}, DeviceSpec{DeviceKind::cpu, 1}};
  const std::vector<float> a = train5(two, staged, &name);
  EXPECT_EQ(name, "host-staged reduction");
  const std::vector<float> b = train5(two, PlacementOptions{}, &name);
  EXPECT_EQ(name, "thread all-reduce");
  EXPECT_EQ(a, b);  // the same sums in the same order
  EXPECT_LT(rms_rel(a, cpu_reference()), 1e-5);
}

TEST(Staged, CrossDeviceOpsAreCheckedForTheDevices) {
  const std::vector<DeviceSpec> two{DeviceSpec{DeviceKind::cpu, 0}, DeviceSpec{DeviceKind::cpu, 1}};
  for (const char* ops : {"nccl", "ring"}) {
    try {
      make_communicator(two, 1.0, ops);
      ADD_FAILURE() << ops << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::value) << e.what();
    }
  }
  try {
    make_communicator({DeviceSpec{DeviceKind::cpu, 0}, gpu(0)}, 1.0, "");
    ADD_FAILURE() << "mixed devices: no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("all be CPUs or all be GPUs"), std::string::npos);
  }
}

TEST(GpuTraining, OneGpuReplicaEqualsOneCpuReplica) {
  MR_REQUIRE_GPUS(1);
  EXPECT_LT(rms_rel(train5({gpu(0)}, PlacementOptions{}), cpu_reference()), 1e-4);
}

TEST(GpuTraining, NcclWithOneRankIsTheIdentity) {
  MR_REQUIRE_GPUS(1);
  if (!built_with_nccl()) {
    if (gpu_required()) FAIL() << "MIRRORED_TEST_CUDA=1 but this build has no NCCL";
    GTEST_SKIP() << "built without NCCL";
  }
  auto be = make_cuda_backend(0, 0);
  auto comm = make_nccl_communicator({0}, 10.0);
  EXPECT_EQ(comm->name(), "NCCL");
  std::vector<float> v(100000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.001f * static_cast<float>(i);
  auto buf = be->allocate(v.size() * sizeof(float));
  be->upload(buf.get(), v.data(), v.size() * sizeof(float));
  comm->all_reduce_sum(0, *be, static_cast<float*>(buf.get()), static_cast<int64_t>(v.size()));
  comm->broadcast(0, 0, *be, static_cast<float*>(buf.get()), static_cast<int64_t>(v.size()));
  std::vector<float> back(v.size());
  be->download(back.data(), buf.get(), back.size() * sizeof(float));
  EXPECT_EQ(back, v);
}

TEST(GpuTraining, TwoLogicalGpusOnOnePhysicalGpuUseTheFallbacks) {
  MR_REQUIRE_GPUS(1);
  PlacementOptions o;
  o.logical_per_gpu = 2;
  std::string name, note;
  const std::vector<float> peer = train5({gpu(0), gpu(1)}, o, &name, &note);
  EXPECT_EQ(name, "peer-copy all-reduce");
  if (built_with_nccl()) EXPECT_NE(note.find("share one physical GPU"), std::string::npos) << note;
  EXPECT_LT(rms_rel(peer, cpu_reference()), 1e-4);
  o.cross_device_ops = "reduce_to_one_device";
  const std::vector<float> staged = train5({gpu(0), gpu(1)}, o, &name, &note);
  EXPECT_EQ(name, "host-staged reduction");
  EXPECT_TRUE(note.empty()) << note;
  EXPECT_LT(rms_rel(staged, cpu_reference()), 1e-4);
}

TEST(GpuTraining, NcclOnTwoOrMorePhysicalGpus) {
  const int n = cuda_device_count();
  if (n < 2) GTEST_SKIP() << "needs 2 physical GPUs, " << n << " visible";
  std::vector<DeviceSpec> devs;
  for (int i = 0; i < n; ++i) devs.push_back(gpu(i));
  std::string name, note;
  const std::vector<float> w = train5(devs, PlacementOptions{}, &name, &note);
  EXPECT_EQ(name, built_with_nccl() ? "NCCL" : "peer-copy all-reduce") << note;
  EXPECT_LT(rms_rel(w, cpu_reference()), 1e-4);
}

// Nothing allocates inside a step: once the first batch of a size reserved
// the buffers, further training and evaluation steps of that size or smaller
// add no cudaMalloc / cudaHostAlloc on any replica.
TEST(GpuTraining, StepsAllocateNothing) {
  MR_REQUIRE_GPUS(1);
  Model m(vignette_mlp(11, 0.2, 5), {gpu(0)}, PlacementOptions{});
  CompileConfig c;
  c.loss.from_logits = true;
  c.metrics.push_back(MetricConfig{});
  m.compile(c);
  const Data big = batch_data(64, 1), small = batch_data(37, 2);
  auto step = [&m](const Data& d, bool train) {
    HostBatch b;
    b.rows = d.rows;
    b.parts = {HostComponent{d.x.data(), 784}, HostComponent{d.y.data(), 1}};
    if (train) {
      m.train_step(b);
    } else {
      m.start_eval_step(b);
      m.finish_step();
    }
  };
  step(big, true);
  m.read_metrics();  // waits for the device
  const int64_t before = m.replica_backend(0).system_allocations();
  for (int s = 0; s < 5; ++s) step(s % 2 ? small : big, s != 3);
  m.read_metrics();
  EXPECT_EQ(m.replica_backend(0).system_allocations(), before);
}

}  // namespace
}  // namespace mr
