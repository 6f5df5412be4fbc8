#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/fp_mode.h"
#include "core/thread_team.h"

namespace mr {
namespace {

// Every part runs once, on the caller (member 0) or one of the team's
// threads, and the member index names the thread.
TEST(ThreadTeam, EveryPartRunsOnceOnAMemberItNames) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadTeam team(threads);
    EXPECT_EQ(team.size(), threads);
    EXPECT_EQ(team.active(), threads);
    for (int64_t parts : {1, 2, 7, 100}) {
      for (int round = 0; round < 200; ++round) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(parts));
        std::vector<std::thread::id> by_member(static_cast<size_t>(threads));
        std::mutex mu;
        bool same_thread = true;
        team.run_parts(parts, [&](int64_t part, int member) {
          ASSERT_GE(member, 0);
          ASSERT_LT(member, threads);
          hits[static_cast<size_t>(part)]++;
          std::lock_guard<std::mutex> lk(mu);
          auto& id = by_member[static_cast<size_t>(member)];
          if (id == std::thread::id()) id = std::this_thread::get_id();
          same_thread = same_thread && id == std::this_thread::get_id();
        });
        for (int64_t p = 0; p < parts; ++p)
          ASSERT_EQ(hits[static_cast<size_t>(p)].load(), 1) << threads << " threads, part " << p;
        EXPECT_TRUE(same_thread);
        if (by_member[0] != std::thread::id()) EXPECT_EQ(by_member[0], std::this_thread::get_id());
        for (int m = 1; m < threads; ++m)
          if (by_member[static_cast<size_t>(m)] != std::thread::id())
            EXPECT_NE(by_member[static_cast<size_t>(m)], std::this_thread::get_id());
      }
    }
  }
}

TEST(ThreadTeam, RepeatedRunsSeeEachOthersResults) {
  ThreadTeam team(2);
  std::vector<long> data(2, 0);
  for (int round = 0; round < 20000; ++round)
    team.run_parts(2, [&](int64_t part, int) { data[static_cast<size_t>(part)] += part + 1; });
  EXPECT_EQ(data[0], 20000);
  EXPECT_EQ(data[1], 40000);
}

TEST(ThreadTeam, RunsAfterTheMembersFellAsleep) {
  ThreadTeam team(2);
  std::atomic<int> count{0};
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the spin phase
    team.run_parts(2, [&](int64_t, int) { count++; });
  }
  EXPECT_EQ(count.load(), 6);
}

// run_parts() notifies only announced sleepers. Gaps and part durations
// around the spin phase's length make members and the caller fall asleep and
// wake on both sides of the announcement; a lost wake-up hangs here, a
// missing ordering shows as a stale value.
TEST(ThreadTeam, HandoffsAroundTheSpinPhaseLoseNoWakeUp) {
  ThreadTeam team(3);
  team.set_adaptive(false);  // the slow parts below must not take members out
  std::vector<long> data(3, 0);
  for (int round = 0; round < 300; ++round) {
    const auto gap = std::chrono::microseconds((round * 37) % 400);
    if (round % 3 == 0) std::this_thread::sleep_for(gap);  // members may sleep
    team.run_parts(3, [&](int64_t part, int) {
      if (part == 1 && round % 3 == 1) std::this_thread::sleep_for(gap);  // caller may sleep
      data[static_cast<size_t>(part)] += round;
    });
    const long expect = static_cast<long>(round) * (round + 1) / 2;
    for (int m = 0; m < 3; ++m)
      ASSERT_EQ(data[static_cast<size_t>(m)], expect) << "round " << round;
  }
}

TEST(ThreadTeam, PartExceptionPropagatesAndTeamStaysUsable) {
  ThreadTeam team(2);
  std::atomic<int> ran{0};
  try {
    team.run_parts(4, [&](int64_t part, int) {
      ran++;
      if (part == 2) fail(ErrorKind::value, "boom from part ", part);
    });
    FAIL() << "run_parts() did not rethrow";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::value);
    EXPECT_STREQ(e.what(), "boom from part 2");
  }
  EXPECT_EQ(ran.load(), 4);  // the other parts still ran
  // A later run succeeds and does not rethrow the old error.
  std::atomic<int> count{0};
  team.run_parts(2, [&](int64_t, int) { count++; });
  EXPECT_EQ(count.load(), 2);
}

TEST(ThreadTeam, PartsFlushDenormalsAndCallerModeIsRestored) {
  const bool before = flush_to_zero_enabled();
  ThreadTeam team(3);
  for (int round = 0; round < 50; ++round) {
    std::vector<int> ftz(6, -1);
    team.run_parts(
        6, [&](int64_t part, int) { ftz[static_cast<size_t>(part)] = flush_to_zero_enabled(); });
    for (int p = 0; p < 6; ++p) ASSERT_EQ(ftz[static_cast<size_t>(p)], 1) << "part " << p;
  }
  EXPECT_EQ(flush_to_zero_enabled(), before);
  // Subnormal arithmetic in a part gives zero.
  volatile float tiny = 1e-30f;
  std::vector<float> out(3, -1.0f);
  team.run_parts(3, [&](int64_t part, int) { out[static_cast<size_t>(part)] = tiny * 1e-10f; });
  for (float v : out) EXPECT_EQ(v, 0.0f);
}

// A member that is descheduled in the middle of its part (played here by a
// member that sleeps 2 ms in every part it runs) makes the caller wait; the
// team takes it out of the work, says why, and tries the whole team again
// later: while the member is still slow the trial fails and the team stays
// cut; once it is not, the whole team works again.
TEST(ThreadTeam, TakesOutMembersThatKeepItWaitingAndTriesThemAgain) {
  ThreadTeam team(2);
  std::atomic<bool> slow{true};
  std::atomic<long> sum{0};
  auto job = [&](int64_t part, int member) {
    if (member != 0 && slow.load()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    sum += part + 1;
  };
  long expect = 0;
  const auto start = std::chrono::steady_clock::now();
  while (team.active() == 2 &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    team.run_parts(2, job);
    expect += 3;
  }
  ASSERT_EQ(team.active(), 1) << "the team kept a member that made it wait";
  TeamStatus st = team.status();
  EXPECT_EQ(st.size, 2);
  EXPECT_EQ(st.active, 1);
  EXPECT_GE(st.stalls, 2);
  EXPECT_EQ(st.reductions, 1);
  EXPECT_NE(st.why.find("another process is using the cores"), std::string::npos) << st.why;
  // Cut: the parts run on the caller alone, none waits for the slow member.
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) {
    team.run_parts(2, job);
    expect += 3;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(50));
  // The trial after ~250 ms finds the member still slow: cut again.
  const auto t1 = std::chrono::steady_clock::now();
  while (team.status().reductions < 2 &&
         std::chrono::steady_clock::now() - t1 < std::chrono::seconds(10)) {
    team.run_parts(2, job);
    expect += 3;
  }
  EXPECT_EQ(team.status().reductions, 2);
  EXPECT_EQ(team.active(), 1);
  // The member is fast again: a later trial keeps the whole team.
  slow = false;
  const auto t2 = std::chrono::steady_clock::now();
  int64_t calls = 0;
  while (std::chrono::steady_clock::now() - t2 < std::chrono::seconds(10)) {
    team.run_parts(2, job);
    expect += 3;
    if (++calls > 2000 && team.active() == 2) break;
  }
  EXPECT_EQ(team.active(), 2);
  EXPECT_EQ(team.status().why, "");
  EXPECT_EQ(sum.load(), expect);
}

TEST(ThreadTeam, ParallelForCoversRangeInGrainMultiples) {
  for (int threads : {1, 2, 3}) {
    ThreadTeam team(threads);
    for (int64_t n : {0, 1, 7, 16, 100, 1000, 1001}) {
      for (int64_t grain : {1, 8, 64}) {
        std::vector<int> seen(static_cast<size_t>(n), 0);
        std::atomic<int> chunks{0};
        team.parallel_for(n, grain, [&](int64_t b, int64_t e) {
          EXPECT_LT(b, e);
          if (e != n) EXPECT_EQ((e - b) % grain, 0);
          EXPECT_EQ(b % grain, 0);
          for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)]++;
          chunks++;
        });
        for (int64_t i = 0; i < n; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], 1);
        EXPECT_LE(chunks.load(), threads);
        if (n <= grain) EXPECT_LE(chunks.load(), 1);
      }
    }
  }
}

TEST(ThreadTeam, RejectsZeroThreads) { EXPECT_THROW(ThreadTeam(0), Error); }

}  // namespace
}  // namespace mr
