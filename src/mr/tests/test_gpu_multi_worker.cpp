// The multi-worker NCCL path (issue 16): a job's GPUs joined by one NCCL
// communicator through ncclCommInitRank, its unique id handed out by the
// chief's store. One process with one GPU runs it as a job of one worker on
// a GPU machine; two ranks need two processes with a GPU each, which this
// file runs by starting a second copy of the test binary when the machine has
// two GPUs, and otherwise says that it was skipped. On CPU-only builds and
// machines both skip.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/device_info.h"
#include "core/rng.h"
#include "dist/cluster_spec.h"
#include "dist/worker_group.h"
#include "tests/graphs.h"
#include "tests/test_util.h"
#include "tests/vignette_steps.h"
#include "tests/worker_processes.h"  // free_port, loopback_cluster
#include "train/model.h"

namespace mr {
namespace {

using testing_workers::free_port;
using testing_workers::loopback_cluster;

// This process's part of a job of GPU workers on loopback (the rendezvous
// and the collectives' deadline: `seconds`).
std::shared_ptr<WorkerGroup> gpu_worker(ClusterSpec spec, double seconds) {
  WorkerGroupOptions opt;
  opt.gpu = true;
  opt.timeout = seconds;
  opt.rendezvous_timeout = seconds;
  return std::make_shared<WorkerGroup>(std::move(spec), opt);
}

// 5 Adam steps of the vignette's model on batches of 64 (the last 37 rows)
// on one GPU of a job (or, without workers, alone).
std::vector<float> train5(DeviceSpec dev, const std::shared_ptr<WorkerGroup>& workers,
                          std::string* comm = nullptr) {
  PlacementOptions o;
  o.workers = workers;
  Model m(vignette_mlp(11, 0.2, 5), {dev}, o);
  CompileConfig c;
  c.loss.from_logits = true;
  m.compile(c);
  train_vignette_steps(m, 5);
  if (comm != nullptr) *comm = m.communicator_name();
  return m.get_params();
}

bool require_nccl() {
  if (built_with_nccl()) return true;
  if (gpu_required()) ADD_FAILURE() << "MIRRORED_TEST_CUDA=1 but this build has no NCCL";
  return false;
}

TEST(GpuMultiWorker, OneProcessOneGpuRunsTheNcclPathAcrossWorkers) {
  MR_REQUIRE_GPUS(1);
  if (!require_nccl()) GTEST_SKIP() << "built without NCCL";
  auto group = gpu_worker(loopback_cluster(free_port(), 1, 0), 30);
  EXPECT_EQ(group->engine(), CrossWorker::nccl);
  std::string comm;
  const std::vector<float> job = train5(DeviceSpec{DeviceKind::cuda, 0}, group, &comm);
  EXPECT_EQ(comm, "NCCL across 1 workers");
  const std::vector<float> alone = train5(DeviceSpec{DeviceKind::cuda, 0}, nullptr);
  // One rank: NCCL's all-reduce is the identity, so the job is one GPU alone.
  EXPECT_EQ(job, alone);
  const std::vector<float> cpu = train5(DeviceSpec{DeviceKind::cpu, 0}, nullptr);
  EXPECT_LT(rms_rel(job, cpu), 1e-4);
}

// Two processes, one GPU each: the second is this binary again, running the
// hidden child test below with the cluster in its environment.
TEST(GpuMultiWorker, TwoProcessesOfOneGpuEachMatchOneGpu) {
  const int gpus = cuda_device_count();
  if (gpus < 2)
    GTEST_SKIP() << "two NCCL ranks across processes need two GPUs; this machine has " << gpus
                 << " (skipped)";
  if (!require_nccl()) GTEST_SKIP() << "built without NCCL";
  const int port = free_port();  // the chief's store
  const std::string out = ::testing::TempDir() + "mr_mw_child.bin";
  const pid_t child = fork();
  if (child == 0) {
    setenv("MR_MW_CHILD", std::to_string(port).c_str(), 1);
    setenv("MR_MW_OUT", out.c_str(), 1);
    execl("/proc/self/exe", "mr_tests", "--gtest_filter=GpuMultiWorker.ChildWorker",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  auto group = gpu_worker(loopback_cluster(port, 2, 0), 60);
  const std::vector<float> job = train5(DeviceSpec{DeviceKind::cuda, 0}, group);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the second worker failed";
  std::ifstream in(out, std::ios::binary);
  std::vector<float> other(job.size());
  in.read(reinterpret_cast<char*>(other.data()), static_cast<std::streamsize>(other.size() * 4));
  EXPECT_EQ(job, other);  // every worker ends with the same weights
  const std::vector<float> alone = train5(DeviceSpec{DeviceKind::cuda, 0}, nullptr);
  EXPECT_LT(rms_rel(job, alone), 1e-4);
}

TEST(GpuMultiWorker, ChildWorker) {
  const char* cfg = std::getenv("MR_MW_CHILD");
  if (cfg == nullptr) GTEST_SKIP() << "only run as the second worker of TwoProcessesOfOneGpuEach";
  auto group = gpu_worker(loopback_cluster(std::stoi(cfg), 2, 1), 60);
  const std::vector<float> p = train5(DeviceSpec{DeviceKind::cuda, 1}, group);
  std::ofstream out(std::getenv("MR_MW_OUT"), std::ios::binary);
  out.write(reinterpret_cast<const char*>(p.data()), static_cast<std::streamsize>(p.size() * 4));
}

}  // namespace
}  // namespace mr
