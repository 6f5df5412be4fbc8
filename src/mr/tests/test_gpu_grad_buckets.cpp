// Gradient buckets on GPU replicas (train/grad_buckets.h): the NCCL
// communicator's asynchronous all-reduce and its join (one rank: the
// identity, in launch order), and training on 2 logical GPUs (peer copies)
// and on 2+ physical GPUs (NCCL) giving the weights of one fused all-reduce
// with every replica launching the plan's buckets in order. Skips without a
// GPU (MIRRORED_TEST_CUDA=1 turns the skips into failures); on a GPU machine
// it prints each bucket's launch point in the backward pass.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "core/device_info.h"
#include "core/rng.h"
#include "dist/communicator.h"
#include "tests/graphs.h"
#include "tests/test_util.h"
#include "tests/vignette_steps.h"
#include "train/model.h"

namespace mr {
namespace {

DeviceSpec gpu(int index, int ordinal = -1) {
  DeviceSpec d{DeviceKind::cuda, index};
  d.ordinal = ordinal;
  return d;
}

// Weights of replica 0 after 4 steps of the vignette's MLP (the last batch
// of 37 rows); `bytes` < 0: bucketing off.
std::vector<float> train4(const std::vector<DeviceSpec>& devs, const PlacementOptions& o,
                          int64_t bytes, std::string* comm) {
  Model m(vignette_mlp(11, 0.2, 5), devs, o);
  m.set_overlap(bytes >= 0);
  m.set_bytes_per_pack(bytes < 0 ? 0 : bytes);
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::adam;
  c.optimizer.learning_rate = 1e-3;
  c.loss.from_logits = true;
  m.compile(c);
  train_vignette_steps(m, 4);
  const auto& plan = m.grad_buckets().plan();
  if (bytes >= 0) {
    std::vector<int> want;
    for (size_t b = 0; b < plan.size(); ++b) want.push_back(static_cast<int>(b));
    for (int r = 0; r < m.replicas(); ++r) {
      EXPECT_EQ(m.grad_buckets().last_order(r), want) << "replica " << r;
      const std::vector<int> at = m.grad_buckets().last_launch_nodes(r);
      for (size_t b = 0; b < at.size(); ++b) {
        EXPECT_EQ(at[b], plan[b].ready_node) << "replica " << r << ", bucket " << b;
        if (r == 0)
          std::printf(
              "[ timeline ] %s, bucket %zu (%lld floats) launched when backward had "
              "finished nodes >= %d of %d\n",
              m.communicator_name().c_str(), b, static_cast<long long>(plan[b].floats), at[b],
              m.graph().size());
      }
    }
  }
  for (int r = 1; r < m.replicas(); ++r)
    EXPECT_EQ(m.get_params(r), m.get_params(0)) << "replica " << r << " differs";
  *comm = m.communicator_name();
  return m.get_params();
}

TEST(GpuGradBuckets, NcclAsyncAllReduceAndJoinWithOneRank) {
  MR_REQUIRE_GPUS(1);
  if (!built_with_nccl()) {
    if (gpu_required()) FAIL() << "MIRRORED_TEST_CUDA=1 but this build has no NCCL";
    GTEST_SKIP() << "built without NCCL";
  }
  auto be = make_cuda_backend(0, 0);
  auto comm = make_nccl_communicator({0}, 10.0);
  std::vector<float> v(300000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5f * static_cast<float>(i % 1000);
  auto buf = be->allocate(v.size() * sizeof(float));
  be->upload(buf.get(), v.data(), v.size() * sizeof(float));
  float* p = static_cast<float*>(buf.get());
  // Three buckets, launched back to front as backward would.
  comm->all_reduce_sum_async(0, *be, p + 200000, 100000);
  comm->all_reduce_sum_async(0, *be, p + 100000, 100000);
  comm->all_reduce_sum_async(0, *be, p, 100000);
  comm->join(0, *be);
  // After the join, on the compute lane: out = 2 * the reduced buffer.
  auto out = be->allocate(v.size() * sizeof(float));
  float* q = static_cast<float*>(out.get());
  be->fill(static_cast<int64_t>(v.size()), q, 0.0f);
  be->axpy(static_cast<int64_t>(v.size()), 2.0f, p, q);
  std::vector<float> back(v.size());
  be->download(back.data(), q, back.size() * sizeof(float));
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(back[i], 2.0f * v[i]) << i;
}

TEST(GpuGradBuckets, TwoLogicalGpusBucketedEqualsFused) {
  MR_REQUIRE_GPUS(1);
  PlacementOptions o;
  o.logical_per_gpu = 2;
  std::string name;
  const std::vector<float> fused = train4({gpu(0), gpu(1)}, o, -1, &name);
  const std::vector<float> small = train4({gpu(0), gpu(1)}, o, 4, &name);
  const std::vector<float> dflt = train4({gpu(0), gpu(1)}, o, 0, &name);
  EXPECT_EQ(name, "peer-copy all-reduce");
  EXPECT_LT(rms_rel(small, fused), 1e-6);
  EXPECT_LT(rms_rel(dflt, fused), 1e-6);
}

TEST(GpuGradBuckets, NcclOnTwoPhysicalGpusBucketedEqualsFused) {
  const int n = cuda_device_count();
  if (n < 2) GTEST_SKIP() << "needs 2 physical GPUs, " << n << " visible";
  std::vector<DeviceSpec> devs{gpu(0), gpu(1)};
  std::string name;
  const std::vector<float> fused = train4(devs, PlacementOptions{}, -1, &name);
  const std::vector<float> small = train4(devs, PlacementOptions{}, 4, &name);
  EXPECT_EQ(name, built_with_nccl() ? "NCCL" : "peer-copy all-reduce");
  EXPECT_LT(rms_rel(small, fused), 1e-5);
}

}  // namespace
}  // namespace mr
