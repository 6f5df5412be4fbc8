// Several replicas: the thread all-reduce, equivalence with one replica,
// bit-identical replicas, uneven and empty slices, failures and deadlines.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "data/array_source.h"
#include "dist/comm_threads.h"
#include "tests/graphs.h"
#include "tests/test_util.h"
#include "train/loop.h"
#include "train/model.h"

namespace mr {
namespace {

TEST(ThreadCommunicator, AllReduceSumsInRankOrderOnEveryRank) {
  for (int ranks : {2, 3, 4}) {
    for (int64_t n : {1, 5, 4097, 100000}) {
      ThreadCommunicator comm(ranks, 10.0);
      std::vector<std::unique_ptr<Backend>> be;
      std::vector<std::vector<float>> bufs(static_cast<size_t>(ranks));
      for (int r = 0; r < ranks; ++r) {
        be.push_back(make_cpu_backend(r, 1));
        for (int64_t i = 0; i < n; ++i)
          bufs[r].push_back(std::sin(0.1f * static_cast<float>(i + 1) * (r + 1)));
      }
      std::vector<float> want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        float s = bufs[0][i];
        for (int r = 1; r < ranks; ++r) s += bufs[r][i];
        want[static_cast<size_t>(i)] = s;
      }
      std::vector<std::thread> threads;
      for (int r = 0; r < ranks; ++r)
        threads.emplace_back([&, r] { comm.all_reduce_sum(r, *be[r], bufs[r].data(), n); });
      for (auto& t : threads) t.join();
      for (int r = 0; r < ranks; ++r)
        EXPECT_EQ(bufs[r], want) << ranks << " ranks, n " << n << ", rank " << r;
    }
  }
}

TEST(ThreadCommunicator, BroadcastAndTimeoutNamingTheMissingRank) {
  ThreadCommunicator comm(3, 0.2);
  auto be = make_cpu_backend(0, 1);
  std::vector<std::vector<float>> bufs{{1, 2, 3}, {0, 0, 0}, {9, 9, 9}};
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] { comm.broadcast(r, 0, *be, bufs[r].data(), 3); });
  for (auto& t : threads) t.join();
  for (auto& b : bufs) EXPECT_EQ(b, (std::vector<float>{1, 2, 3}));
  // Rank 2 never comes: ranks 0 and 1 give up after the deadline.
  std::vector<std::string> errors(2);
  threads.clear();
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      try {
        comm.barrier(r);
      } catch (const Error& e) {
        errors[r] = std::string(kind_name(e.kind())) + ": " + e.what();
      }
    });
  for (auto& t : threads) t.join();
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(waited, 2.0);
  int timeouts = 0;
  for (const auto& e : errors) {
    EXPECT_FALSE(e.empty());
    if (e.rfind("timeout: ", 0) == 0) {
      ++timeouts;
      EXPECT_NE(e.find("waiting for replica(s) 2"), std::string::npos) << e;
    }
  }
  EXPECT_GE(timeouts, 1);
  comm.reset();
  threads.clear();
  for (int r = 0; r < 3; ++r) threads.emplace_back([&, r] { comm.barrier(r); });
  for (auto& t : threads) t.join();
}

std::shared_ptr<const Graph> mlp(double dropout) {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{12}));
  l.push_back(make_dense(16, Activation::relu, true, glorot_uniform(3), Initializer{}));
  l.push_back(make_dropout(dropout, 77));
  l.push_back(make_dense(5, Activation::linear, true, glorot_uniform(3), Initializer{}));
  return chain(std::move(l));
}

std::shared_ptr<ArrayData> data(int64_t rows) {
  auto d = std::make_shared<ArrayData>();
  d->rows = rows;
  d->widths = {12, 1};
  d->parts.resize(2);
  for (int64_t i = 0; i < rows * 12; ++i)
    d->parts[0].push_back(std::cos(0.37f * static_cast<float>(i)));
  for (int64_t i = 0; i < rows; ++i) d->parts[1].push_back(static_cast<float>(i % 5));
  return d;
}

std::vector<float> train(int replicas, std::vector<std::vector<int64_t>>* rows_seen = nullptr,
                         Model** keep = nullptr) {
  std::vector<DeviceSpec> devs;
  for (int i = 0; i < replicas; ++i) devs.push_back(DeviceSpec{DeviceKind::cpu, i});
  static std::unique_ptr<Model> held;
  auto m = std::make_unique<Model>(mlp(0.3), devs, 1);
  CompileConfig c;
  c.optimizer.learning_rate = 0.01;
  c.loss.from_logits = true;
  c.metrics.push_back(MetricConfig{});
  m->compile(c);
  // 23 rows, batch 10: batches of 10, 10 and 3 (fewer rows than 4 replicas).
  ArraySource src(data(23), 10, true, 5);
  class Rows : public LoopHooks {
   public:
    Rows(Model& m, std::vector<std::vector<int64_t>>* out) : m_(m), out_(out) {}
    bool batch_events() const override { return out_ != nullptr; }
    void on_batch_end(int64_t, const std::vector<double>&) override {
      out_->push_back(m_.rows_last_step());
    }

   private:
    Model& m_;
    std::vector<std::vector<int64_t>>* out_;
  } hooks(*m, rows_seen);
  for (int e = 0; e < 4; ++e) train_epoch(*m, src, e, -1, hooks);
  for (int r = 1; r < replicas; ++r)
    EXPECT_EQ(m->get_params(r), m->get_params(0)) << "replica " << r;
  std::vector<float> p = m->get_params();
  if (keep != nullptr) {
    held = std::move(m);
    *keep = held.get();
  }
  return p;
}

TEST(Strategy, OneToFourReplicasGiveTheSameWeights) {
  const std::vector<float> one = train(1);
  for (int n : {2, 3, 4}) {
    std::vector<std::vector<int64_t>> rows;
    const std::vector<float> p = train(n, &rows);
    double num = 0, den = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      num += (double{p[i]} - one[i]) * (double{p[i]} - one[i]);
      den += double{one[i]} * one[i];
    }
    EXPECT_LT(std::sqrt(num / den), 1e-5) << n << " replicas";
    ASSERT_EQ(rows.size(), 12u);  // 4 epochs x 3 batches
    for (size_t s = 0; s < rows.size(); ++s) {
      const int64_t global = s % 3 == 2 ? 3 : 10;
      ASSERT_EQ(rows[s].size(), static_cast<size_t>(n));
      int64_t total = 0;
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(rows[s][r], global / n + (r < global % n ? 1 : 0))
            << "step " << s << " replica " << r;
        total += rows[s][r];
      }
      EXPECT_EQ(total, global);
    }
  }
}

TEST(Strategy, EveryReplicaHasItsOwnThreadAndBuffers) {
  Model* m = nullptr;
  train(3, nullptr, &m);
  const auto threads = m->replica_threads();
  const auto bufs = m->replica_param_buffers();
  ASSERT_EQ(threads.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < i; ++j) {
      EXPECT_NE(threads[i], threads[j]);
      EXPECT_NE(bufs[i], bufs[j]);
    }
  for (auto t : threads) EXPECT_NE(t, std::this_thread::get_id());
}

TEST(Strategy, AFailingReplicaIsReportedAndNothingHangsOrLeaks) {
  const int before = thread_count();
  {
    std::vector<DeviceSpec> devs{{DeviceKind::cpu, 0}, {DeviceKind::cpu, 1}, {DeviceKind::cpu, 2}};
    Model m(mlp(0.0), devs, 1, 5.0);
    CompileConfig c;
    c.loss.from_logits = true;
    m.compile(c);
    ArraySource src(data(40), 10, false, 0);
    LoopHooks none;
    m.inject_fault(1, 3, Model::Fault::error);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      train_epoch(m, src, 0, -1, none);
      FAIL() << "no error";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("replica 1 (cpu:1)"), std::string::npos) << msg;
      EXPECT_NE(msg.find("step 3"), std::string::npos) << msg;
      EXPECT_NE(msg.find("injected failure"), std::string::npos) << msg;
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
    EXPECT_EQ(m.iterations(), 2);
    // The model still trains afterwards, replicas identical.
    m.inject_fault(0, -1, Model::Fault::none);
    train_epoch(m, src, 1, -1, none);
    EXPECT_EQ(m.get_params(0), m.get_params(2));
    // A stalled replica: its peers time out at the all-reduce deadline.
    Model slow(mlp(0.0), devs, 1, 0.3);
    slow.compile(c);
    slow.inject_fault(2, 1, Model::Fault::stall, 1.0);
    try {
      train_epoch(slow, src, 0, -1, none);
      FAIL() << "no timeout";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::timeout) << e.what();
      EXPECT_NE(std::string(e.what()).find("waiting for replica(s) 2"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(thread_count(), before);
}

// An interrupt seen while replicas work: a healthy step finishes and the
// caller stops at its boundary; a step stuck in a collective past the grace
// period (5 s) is stopped with Error(interrupted), long before its deadline,
// and the model trains again afterwards.
TEST(Strategy, AnInterruptStopsAtTheStepBoundaryOrUnsticksACollective) {
  std::vector<DeviceSpec> devs{{DeviceKind::cpu, 0}, {DeviceKind::cpu, 1}};
  Model m(mlp(0.0), devs, 1, 120.0);
  CompileConfig c;
  c.loss.from_logits = true;
  m.compile(c);
  const auto d = data(10);
  HostBatch b;
  b.rows = 10;
  b.parts = {HostComponent{d->parts[0].data(), 12}, HostComponent{d->parts[1].data(), 1}};
  m.inject_fault(1, 1, Model::Fault::stall, 0.3);  // a slow but healthy step
  m.start_train_step(b);
  EXPECT_TRUE(m.finish_step([] { return true; }));
  EXPECT_EQ(m.iterations(), 1);
  EXPECT_EQ(m.get_params(0), m.get_params(1));

  m.inject_fault(1, 2, Model::Fault::stall, 6.0);  // replica 0 waits in the all-reduce
  const auto t0 = std::chrono::steady_clock::now();
  m.start_train_step(b);
  try {
    m.finish_step([] { return true; });
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::interrupted) << e.what();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 20.0);  // the stalled replica's 6 s, not the 120 s deadline
  EXPECT_EQ(m.iterations(), 1);
  EXPECT_EQ(m.get_params(0), m.get_params(1));  // no replica applied the interrupted update
  m.inject_fault(0, -1, Model::Fault::none);
  m.train_step(b);
  EXPECT_EQ(m.iterations(), 2);
  EXPECT_EQ(m.get_params(0), m.get_params(1));
}

// Nothing allocates inside a step: once the first batch reserved the
// buffers, further training and evaluation steps of that size or smaller add
// no allocation on any replica's backend.
TEST(Strategy, StepsAllocateNothing) {
  std::vector<DeviceSpec> devs{{DeviceKind::cpu, 0}, {DeviceKind::cpu, 1}};
  Model m(mlp(0.3), devs, 1);
  CompileConfig c;
  c.loss.from_logits = true;
  c.metrics.push_back(MetricConfig{});
  m.compile(c);
  const auto d = data(10);
  auto batch = [&d](int64_t rows) {
    HostBatch b;
    b.rows = rows;
    b.parts = {HostComponent{d->parts[0].data(), 12}, HostComponent{d->parts[1].data(), 1}};
    return b;
  };
  m.train_step(batch(10));
  const int64_t before =
      m.replica_backend(0).system_allocations() + m.replica_backend(1).system_allocations();
  for (int64_t rows : {10, 3, 1, 10}) m.train_step(batch(rows));
  const HostBatch eval = batch(7);  // must outlive the step
  m.start_eval_step(eval);
  m.finish_step();
  m.read_metrics();
  EXPECT_EQ(m.replica_backend(0).system_allocations() + m.replica_backend(1).system_allocations(),
            before);
}

}  // namespace
}  // namespace mr
