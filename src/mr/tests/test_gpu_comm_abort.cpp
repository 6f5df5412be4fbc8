// The two halves of an abort on the GPU communicators: abort() from a replica
// thread only sets the flag (collectives then refuse to start), reset() on
// the calling thread performs it (ncclCommAbort of every rank, then fresh
// communicators), after which collectives work again. Needs a GPU.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "core/device_info.h"
#include "dist/communicator.h"
#include "tests/test_util.h"

namespace mr {
namespace {

void abort_then_recover(Communicator& comm, Backend& be) {
  auto buf = be.allocate(16 * sizeof(float));
  std::vector<float> v(16, 2.0f), got(16);
  be.upload(buf.get(), v.data(), 64);
  std::thread replica([&] { comm.abort("replica 1 failed"); });
  replica.join();
  EXPECT_TRUE(comm.abort_requested());
  comm.reset();  // this thread: every "replica" has returned
  EXPECT_FALSE(comm.abort_requested());
  comm.all_reduce_sum(0, be, static_cast<float*>(buf.get()), 16);
  be.download(got.data(), buf.get(), 64);
  EXPECT_EQ(got, v);  // one rank: the sum is the input
}

TEST(GpuCommAbort, NcclAbortIsPerformedByResetAndTheCommunicatorRecovers) {
  MR_REQUIRE_GPUS(1);
  if (!built_with_nccl()) GTEST_SKIP() << "built without NCCL";
  auto be = make_cuda_backend(0, 0);
  auto comm = make_nccl_communicator({0}, 30.0);
  abort_then_recover(*comm, *be);
}

}  // namespace
}  // namespace mr
