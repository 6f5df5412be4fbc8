// The Gloo process group (dist/process_group.h) between real processes on
// loopback (tests/worker_processes.h forks them; rank 0 serves the store):
// sums of floats and doubles, bit-identical on every rank; broadcast;
// all_gather; barrier; and a peer that dies: the call in flight fails, the
// group is broken for good, and the next call throws at once.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dist/process_group.h"
#include "dist/tcp_store.h"
#include "tests/worker_processes.h"

namespace mr {
namespace {

using namespace testing_workers;

// Rank k of an n-rank group whose store rank 0 serves on `port`.
struct Member {
  std::unique_ptr<StoreServer> server;
  std::unique_ptr<StoreClient> store;
  std::unique_ptr<ProcessGroup> group;
  Member(int port, int k, int n, double timeout) {
    if (k == 0) server = std::make_unique<StoreServer>("127.0.0.1", port);
    store = std::make_unique<StoreClient>("127.0.0.1", port, 10.0, "rank " + std::to_string(k));
    group = make_gloo_group(*store, "gloo-test/", k, n, "127.0.0.1", timeout);
  }
  ~Member() {
    // Rank 0's store must outlive the others' last use of it.
    if (server) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
};

float input(int rank, int64_t i) {
  return std::sin(0.001f * static_cast<float>(i) + static_cast<float>(rank)) *
         (1.0f + static_cast<float>(rank));
}

std::string reports(const std::vector<ChildReport>& r) {
  std::string s;
  for (size_t k = 0; k < r.size(); ++k)
    s += "\n  rank " + std::to_string(k) + ": " + r[k].describe().substr(0, 300);
  return s;
}

// Every rank sums 100,003 floats (several ring chunks, not a multiple of
// the ranks) and returns what it got. 2 ranks: exactly the serial sum (one
// addition per element, commutative); 3 ranks: the serial sum within float
// rounding, and bit-identical on every rank (each chunk is reduced on one
// rank, then copied).
TEST(WorkerGroupGloo, AllReduceSumEqualsTheSerialSumAndIsBitIdenticalOnEveryRank) {
  MR_SKIP_UNLESS_WORKERS_CAN_RUN();
  const int64_t len = 100003;
  for (int n : {2, 3}) {
    const int port = free_port();
    const auto r = run_children(
        n,
        [&](int k, const ChildPipe&) {
          Member m(port, k, n, 5.0);
          std::vector<float> buf(static_cast<size_t>(len));
          for (int64_t i = 0; i < len; ++i) buf[static_cast<size_t>(i)] = input(k, i);
          m.group->all_reduce_sum(buf.data(), len);
          return bytes_of(buf);
        },
        30.0);
    for (const ChildReport& c : r) ASSERT_TRUE(c.ok()) << reports(r);
    const std::vector<float> got = floats_of(r[0].text);
    ASSERT_EQ(got.size(), static_cast<size_t>(len));
    for (int k = 1; k < n; ++k)
      EXPECT_EQ(r[static_cast<size_t>(k)].text, r[0].text) << "rank " << k << " of " << n;
    double worst = 0;
    int64_t exact = 0;
    for (int64_t i = 0; i < len; ++i) {
      float serial = 0.0f;
      double wide = 0.0, scale = 0.0;
      for (int k = 0; k < n; ++k) {
        serial += input(k, i);
        wide += double{input(k, i)};
        scale += std::abs(double{input(k, i)});
      }
      const float g = got[static_cast<size_t>(i)];
      exact += g == serial;
      // Float rounding of n - 1 additions: at most (n - 1) * 2^-24 of the
      // sum of magnitudes, whatever the order.
      worst = std::max(worst, std::abs(double{g} - wide) / scale);
    }
    if (n == 2) EXPECT_EQ(exact, len);
    EXPECT_LT(worst, 1e-6) << n << " ranks";
  }
}

// Doubles: integers and quarters, whose sums are exact in any order.
// Broadcast from rank 1; all_gather of each rank's bytes in rank order.
TEST(WorkerGroupGloo, DoublesBroadcastAndAllGather) {
  MR_SKIP_UNLESS_WORKERS_CAN_RUN();
  const int n = 3, len = 257;
  const int port = free_port();
  const auto r = run_children(
      n,
      [&](int k, const ChildPipe&) {
        Member m(port, k, n, 5.0);
        std::string out;
        std::vector<double> d(len);
        for (int i = 0; i < len; ++i) d[static_cast<size_t>(i)] = k * 4096.0 - i * 0.25;
        m.group->all_reduce_sum(d.data(), len);
        for (int i = 0; i < len; ++i)
          if (d[static_cast<size_t>(i)] != (0 + 1 + 2) * 4096.0 - 3 * i * 0.25)
            return "double sum " + std::to_string(i) + " is " + std::to_string(d[i]);
        out += "doubles-exact";
        std::vector<float> b(100, static_cast<float>(k) + 0.5f);
        m.group->broadcast(b.data(), 100, 1);
        for (float v : b)
          if (v != 1.5f) return "broadcast gave " + std::to_string(v);
        out += " broadcast-from-1";
        const std::string mine = "rank" + std::to_string(k) + "!";  // 6 bytes each
        std::string all(mine.size() * n, '?');
        m.group->all_gather(mine.data(), mine.size(), &all[0]);
        out += " " + all;
        return out + " broken=" + (m.group->broken() ? "yes" : "no");
      },
      30.0);
  for (const ChildReport& c : r)
    EXPECT_EQ(c.text, "doubles-exact broadcast-from-1 rank0!rank1!rank2! broken=no") << reports(r);
}

// A barrier releases nobody before the last rank arrives: rank 0 arrives
// 0.5 s late and the others leave the barrier no earlier than it entered.
TEST(WorkerGroupGloo, BarrierWaitsForTheLastRank) {
  MR_SKIP_UNLESS_WORKERS_CAN_RUN();
  const int n = 3;
  const int port = free_port();
  const auto r = run_children(
      n,
      [&](int k, const ChildPipe&) {
        Member m(port, k, n, 5.0);
        m.group->barrier();  // everyone connected and here
        if (k == 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));
        const int64_t entered = now_ns();
        m.group->barrier();
        return std::to_string(entered) + " " + std::to_string(now_ns());
      },
      30.0);
  for (const ChildReport& c : r) ASSERT_TRUE(c.ok()) << reports(r);
  const int64_t late = std::stoll(r[0].text.substr(0, r[0].text.find(' ')));
  for (int k = 1; k < n; ++k) {
    const std::string& t = r[static_cast<size_t>(k)].text;
    const int64_t entered = std::stoll(t.substr(0, t.find(' ')));
    const int64_t left = std::stoll(t.substr(t.find(' ') + 1));
    EXPECT_GE(left, late) << "rank " << k << " left before rank 0 arrived";
    EXPECT_GT(static_cast<double>(left - entered) / 1e9, 0.3) << "rank " << k;
  }
}

// Rank 2 leaves without a word (_exit, as a crash would) between two sums:
// the others' sum fails with a classed error long before the 30 s deadline,
// broken() is then true, and the next call throws at once.
TEST(WorkerGroupGloo, APeerThatDiesBreaksTheGroupAndTheNextCallThrowsAtOnce) {
  MR_SKIP_UNLESS_WORKERS_CAN_RUN();
  const int n = 3;
  const int port = free_port();
  const auto r = run_children(
      n,
      [&](int k, const ChildPipe& pipe) {
        Member m(port, k, n, 30.0);
        std::vector<float> buf(4096, 1.0f);
        m.group->all_reduce_sum(buf.data(), 4096);
        if (k == 2) {
          pipe.send(std::to_string(now_ns()));
          _exit(0);
        }
        std::string out;
        try {
          for (int i = 0; i < 1000; ++i) m.group->all_reduce_sum(buf.data(), 4096);
          return std::string("no error");
        } catch (const Error& e) {
          out = std::to_string(now_ns()) + " " + kind_name(e.kind()) + " " +
                (m.group->broken() ? "broken" : "whole");
        }
        const auto t0 = Clock::now();
        try {
          m.group->barrier();
          return out + " second call passed";
        } catch (const Error& e) {
          const double s = std::chrono::duration<double>(Clock::now() - t0).count();
          out += std::string(" then ") + kind_name(e.kind()) + " after " +
                 std::to_string(static_cast<int>(s * 1000)) + " ms: " + e.what();
        }
        return out;
      },
      40.0);
  ASSERT_EQ(r[2].tag, 0) << reports(r);
  const int64_t died = std::stoll(r[2].early);
  for (int k = 0; k < 2; ++k) {
    const std::string& t = r[static_cast<size_t>(k)].text;
    ASSERT_TRUE(r[static_cast<size_t>(k)].ok()) << reports(r);
    const std::vector<std::string> words = [&] {
      std::vector<std::string> w;
      size_t pos = 0;
      for (int i = 0; i < 7 && pos != std::string::npos; ++i) {
        const size_t sp = t.find(' ', pos);
        w.push_back(t.substr(pos, sp == std::string::npos ? sp : sp - pos));
        pos = sp == std::string::npos ? sp : sp + 1;
      }
      return w;
    }();
    ASSERT_GE(words.size(), 7u) << t;
    const double s = static_cast<double>(std::stoll(words[0]) - died) / 1e9;
    EXPECT_LT(s, 10.0) << "rank " << k << ": " << t;
    EXPECT_TRUE(words[1] == "worker" || words[1] == "timeout") << t;
    EXPECT_EQ(words[2], "broken") << t;
    EXPECT_EQ(words[4], "worker") << t;        // the next call: Error(worker)
    EXPECT_LT(std::stoi(words[6]), 200) << t;  // at once, not after a deadline
    EXPECT_NE(t.find("broke earlier"), std::string::npos) << t;
    RecordProperty("rank" + std::to_string(k) + "_seconds_to_error", std::to_string(s));
  }
}

}  // namespace
}  // namespace mr
