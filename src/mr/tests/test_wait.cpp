// Host waits (core/wait.h) and the two-halves abort of communicators: the
// logic every GPU wait and every NCCL abort relies on, shown on the CPU.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/wait.h"
#include "dist/comm_threads.h"

namespace mr {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

TEST(PollUntil, ReturnsWhenReadyIncludingFromAnotherThread) {
  int polls = 0;
  poll_until([&] { return ++polls == 3; }, WaitLimits{1.0}, "dev", "x");
  EXPECT_EQ(polls, 3);
  std::atomic<bool> flag{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    flag = true;
  });
  poll_until([&] { return flag.load(); }, WaitLimits{5.0}, "dev", "x");
  t.join();
}

TEST(PollUntil, DeadlineIsATimeoutNamingTheDeviceAndTheWait) {
  const auto t0 = Clock::now();
  try {
    poll_until([] { return false; }, WaitLimits{0.05}, "gpu:1 (CUDA device 1)", "a download");
    FAIL() << "no timeout";
  } catch (const CollectiveAborted&) {
    FAIL() << "a timeout is not an abort";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::timeout);
    const std::string m = e.what();
    EXPECT_NE(m.find("gpu:1 (CUDA device 1)"), std::string::npos) << m;
    EXPECT_NE(m.find("a download"), std::string::npos) << m;
  }
  EXPECT_GE(since(t0), 0.05);
  EXPECT_LT(since(t0), 2.0);
}

TEST(PollUntil, AbortAndInterruptFlagsStopTheWaitPromptly) {
  std::atomic<bool> abort{false}, interrupt{false};
  const WaitLimits limits{60.0, &abort, &interrupt};
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    abort = true;
  });
  auto t0 = Clock::now();
  EXPECT_THROW(poll_until([] { return false; }, limits, "dev", "x"), CollectiveAborted);
  EXPECT_LT(since(t0), 2.0);
  setter.join();
  abort = false;
  interrupt = true;
  try {
    poll_until([] { return false; }, limits, "dev", "x");
    FAIL() << "no interrupt";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::interrupted);
  }
  // A wait that is already satisfied never reports a flag.
  poll_until([] { return true; }, limits, "dev", "x");
}

// Records which thread performed each half of an abort.
class FakeComm final : public Communicator {
 public:
  int size() const override { return 2; }
  void all_reduce_sum(int, Backend&, float*, int64_t) override {}
  void broadcast(int, int, Backend&, float*, int64_t) override {}
  void barrier(int) override {}
  std::string name() const override { return "fake"; }
  std::atomic<int> requests{0};
  std::vector<std::thread::id> finished_on;
  std::vector<bool> finished_aborted;

 protected:
  void request_abort(const std::string&) override { ++requests; }
  void finish_abort(bool aborted) override {
    finished_on.push_back(std::this_thread::get_id());
    finished_aborted.push_back(aborted);
  }
};

TEST(CommunicatorAbort, RequestedFromAReplicaThreadPerformedOnceByTheResetThread) {
  FakeComm comm;
  EXPECT_FALSE(comm.abort_requested());
  // Replica 1 waits on its "device"; replica 0 fails and requests the abort.
  const WaitLimits limits{60.0, comm.abort_flag(), nullptr};
  bool woke_aborted = false;
  std::thread waiter([&] {
    try {
      poll_until([] { return false; }, limits, "gpu:1", "the all-reduce");
    } catch (const CollectiveAborted&) {
      woke_aborted = true;
    }
  });
  std::thread failing([&] { comm.abort("replica 0 failed"); });
  failing.join();
  waiter.join();
  EXPECT_TRUE(woke_aborted);
  EXPECT_EQ(comm.requests.load(), 1);
  // Nothing was performed by the replica threads.
  EXPECT_TRUE(comm.finished_on.empty());
  EXPECT_TRUE(comm.abort_requested());
  // The main thread, after every replica returned, performs it.
  comm.reset();
  ASSERT_EQ(comm.finished_on.size(), 1u);
  EXPECT_EQ(comm.finished_on[0], std::this_thread::get_id());
  EXPECT_TRUE(comm.finished_aborted[0]);
  EXPECT_FALSE(comm.abort_requested());
  // A reset without an abort only readies the communicator.
  comm.reset();
  ASSERT_EQ(comm.finished_aborted.size(), 2u);
  EXPECT_FALSE(comm.finished_aborted[1]);
}

TEST(CommunicatorAbort, ThreadCommunicatorSetsTheFlagBackendsObserve) {
  ThreadCommunicator comm(2, 30.0);
  CpuBackend be(0, 1);
  be.set_wait_limits(WaitLimits{30.0, comm.abort_flag(), nullptr});
  std::thread blocked([&] { EXPECT_THROW(comm.barrier(1), CollectiveAborted); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  comm.abort("replica 0 failed");
  blocked.join();
  EXPECT_TRUE(be.wait_limits().abort->load());
  comm.reset();
  EXPECT_FALSE(be.wait_limits().abort->load());
  std::thread a([&] { comm.barrier(0); });
  comm.barrier(1);
  a.join();
}

}  // namespace
}  // namespace mr
