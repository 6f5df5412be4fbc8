// The workers of a multi-worker job (dist/worker_group.h) as real processes
// on loopback (tests/worker_processes.h forks them): rendezvous and global
// replica ranks, the host all-reduce, text exchanges and model checks, bad
// clusters (a duplicated index, a missing worker), a Model trained by 2
// processes x 2 CPU replicas against one process with one replica, and a
// worker that dies in the middle of training.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "dist/tcp_store.h"
#include "dist/worker_group.h"
#include "tests/graphs.h"
#include "tests/worker_processes.h"
#include "train/model.h"

namespace mr {
namespace {

using namespace testing_workers;

// Short deadlines: every test here takes a few seconds at most.
WorkerGroupOptions short_options(int local_replicas = 1, double timeout = 5.0) {
  WorkerGroupOptions o;
  o.local_replicas = local_replicas;
  o.timeout = timeout;
  o.rendezvous_timeout = timeout;
  return o;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

std::string all_reports(const std::vector<ChildReport>& r) {
  std::string s;
  for (size_t k = 0; k < r.size(); ++k)
    s += "\n  child " + std::to_string(k) + ": " + r[k].describe();
  return s;
}

// Worker k of n joins with replicas[k] local CPU replicas and reports what it
// derived: "size rank first global engine replicas-of-every-worker".
std::vector<ChildReport> rendezvous(const std::vector<int>& replicas) {
  const int n = static_cast<int>(replicas.size());
  const int port = free_port();
  return run_children(
      n,
      [&](int k, const ChildPipe&) {
        WorkerGroup g(loopback_cluster(port, n, k),
                      short_options(replicas[static_cast<size_t>(k)]));
        std::string s = std::to_string(g.size()) + " " + std::to_string(g.rank()) + " " +
                        std::to_string(g.first_replica()) + " " +
                        std::to_string(g.global_replicas()) + " " + g.engine_name();
        s += " |";
        for (const WorkerInfo& w : g.workers()) s += " " + std::to_string(w.replicas);
        s += " | owners";
        for (int r = 0; r < g.global_replicas(); ++r)
          s += " " + std::to_string(g.worker_of_replica(r));
        return s;
      },
      20.0);
}

TEST(WorkerGroup, TwoAndThreeProcessesRendezvousWithGlobalReplicaRanks) {
  MR_SKIP_UNLESS_WORKERS_CAN_RUN();
  const auto t0 = Clock::now();
  {
    const auto r = rendezvous({2, 1});
    ASSERT_TRUE(r[0].ok() && r[1].ok()) << all_reports(r);
    EXPECT_EQ(r[0].text, "2 0 0 3 Gloo (TCP) | 2 1 | owners 0 0 1");
    EXPECT_EQ(r[1].text, "2 1 2 3 Gloo (TCP) | 2 1 | owners 0 0 1");
  }
  {
    const auto r = rendezvous({1, 2, 1});
    ASSERT_TRUE(r[0].ok() && r[1].ok() && r[2].ok()) << all_reports(r);
    EXPECT_EQ(r[0].text, "3 0 0 4 Gloo (TCP) | 1 2 1 | owners 0 1 1 2");
    EXPECT_EQ(r[1].text, "3 1 1 4 Gloo (TCP) | 1 2 1 | owners 0 1 1 2");
    EXPECT_EQ(r[2].text, "3 2 3 4 Gloo (TCP) | 1 2 1 | owners 0 1 1 2");
  }
  RecordProperty("seconds",
                 std::to_string(std::chrono::duration<double>(Clock::now() - t0).count()));
}

TEST(WorkerGroup, CpuWorkersJoinOnGlooAndTheEngineIsNamed) {
  MR_SKIP_UNLESS_WORKERS_CAN_RUN();
  const int port = free_port();
  const auto r = run_children(
      2,
      [&](int k, const ChildPipe&) {
        WorkerGroup g(loopback_cluster(port, 2, k), short_options());
        const bool gloo = g.engine() == CrossWorker::gloo;
        return std::string(gloo ? "gloo" : "other") + " " +
               (g.group() ? g.group()->name() : "none") + " " +
               std::to_string(g.group() ? g.group()->size() : 0) + " " +
               std::to_string(g.group() ? g.group()->rank() : -1) + " " +
               (g.is_chief() ? "chief" : "worker");
      },
      20.0);
  ASSERT_TRUE(r[0].ok() && r[1].ok()) << all_reports(r);
  EXPECT_EQ(r[0].text, "gloo Gloo (TCP) 2 0 chief");
  EXPECT_EQ(r[1].text, "gloo Gloo (TCP) 2 1 worker");
}

// all_reduce_host sums doubles exactly (values whose sums are exact in any
// order, so the order Gloo adds them in cannot matter); all_gather_text
// returns every worker's text in worker order, exchange after exchange;
// join_model with equal descriptions gives every worker the same sequence
// numbers.
TEST(WorkerGroup, HostSumsTextExchangesAndEqualModels) {
  MR_SKIP_UNLESS_WORKERS_CAN_RUN();
  const int n = 3, len = 1000;
  auto value = [](int worker, int i) { return worker * 1024.0 + i * 0.25 - 100.0; };
  const int port = free_port();
  const auto r = run_children(
      n,
      [&](int k, const ChildPipe&) {
        WorkerGroup g(loopback_cluster(port, n, k), short_options());
        std::vector<double> buf(len);
        for (int i = 0; i < len; ++i) buf[static_cast<size_t>(i)] = value(k, i);
        g.all_reduce_host(buf.data(), len);
        std::string s;
        for (int i = 0; i < len; ++i) {
          double want = 0;
          for (int w = 0; w < n; ++w) want += value(w, i);
          if (buf[static_cast<size_t>(i)] != want)
            return "sum " + std::to_string(i) + " is " + std::to_string(buf[i]) + " not " +
                   std::to_string(want);
        }
        s += "sums-exact";
        for (int round = 0; round < 4; ++round) {
          const auto all = g.all_gather_text(
              "probe", "round " + std::to_string(round) + " from worker " + std::to_string(k));
          if (round >= 2) continue;
          s += " [";
          for (const std::string& t : all) s += t + ";";
          s += "]";
        }
        // Once every worker is past the last round (this exchange), only the
        // last round's keys are left in the store: each worker erased its
        // earlier ones.
        g.all_gather_text("sync", "");
        StoreClient probe("127.0.0.1", port, 5.0, "probe " + std::to_string(k));
        for (int gen = 1; gen <= 4; ++gen)
          for (int w = 0; w < n; ++w)
            if (probe.check({"text/probe/" + std::to_string(gen) + "/" + std::to_string(w)}) !=
                (gen == 4))
              return "key of exchange " + std::to_string(gen) + " of worker " + std::to_string(w) +
                     (gen == 4 ? " missing" : " left behind");
        const int64_t a = g.join_model("Dense (None, 4)\n", "1 layer");
        const int64_t b = g.join_model("Dense (None, 5)\n", "1 layer");
        s += " models " + std::to_string(a) + " " + std::to_string(b);
        return s;
      },
      20.0);
  const std::string want =
      "sums-exact [round 0 from worker 0;round 0 from worker 1;round 0 from worker 2;]"
      " [round 1 from worker 0;round 1 from worker 1;round 1 from worker 2;] models 1 2";
  for (int k = 0; k < n; ++k) EXPECT_EQ(r[static_cast<size_t>(k)].text, want) << all_reports(r);
}

// Worker 2 builds another model: every worker (the one at fault too) stops
// with Error(value) that names worker 2 and what each has.
TEST(WorkerGroup, DifferentModelsFailOnEveryWorkerNamingTheOneThatDiffers) {
  MR_SKIP_UNLESS_WORKERS_CAN_RUN();
  const int n = 3;
  const int port = free_port();
  const auto r = run_children(
      n,
      [&](int k, const ChildPipe&) {
        WorkerGroup g(loopback_cluster(port, n, k), short_options());
        g.join_model(k == 2 ? "Dense (None, 5)\n" : "Dense (None, 4)\n",
                     k == 2 ? "1 layer and 20 parameters" : "1 layer and 16 parameters");
        return std::string("joined");
      },
      20.0);
  for (int k = 0; k < n; ++k) {
    const ChildReport& c = r[static_cast<size_t>(k)];
    EXPECT_EQ(c.tag, 'E') << all_reports(r);
    EXPECT_EQ(c.kind, "value") << c.text;
    EXPECT_NE(c.text.find("different models"), std::string::npos) << c.text;
    EXPECT_NE(c.text.find(worker_name(port, 2) + " has 1 layer and 20 parameters"),
              std::string::npos)
        << c.text;
    EXPECT_NE(c.text.find(worker_name(port, 0) + " has 1 layer and 16 parameters"),
              std::string::npos)
        << c.text;
    EXPECT_EQ(c.text.find(worker_name(port, 1)), std::string::npos) << c.text;
  }
}

// A cluster of 3 workers whose processes claim indices 0, 1 and 1: every
// process stops with Error(value) long before the rendezvous deadline.
TEST(WorkerGroup, ADuplicatedIndexFailsOnEveryProcess) {
  MR_SKIP_UNLESS_WORKERS_CAN_RUN();
  const int port = free_port();
  const std::vector<int> index{0, 1, 1};
  const auto t0 = Clock::now();
  const auto r = run_children(
      3,
      [&](int k, const ChildPipe&) {
        WorkerGroup g(loopback_cluster(port, 3, index[static_cast<size_t>(k)]),
                      short_options(1, 30.0));
        return std::string("joined");
      },
      20.0);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  for (const ChildReport& c : r) {
    EXPECT_EQ(c.tag, 'E') << all_reports(r);
    EXPECT_EQ(c.kind, "value") << c.text;
    EXPECT_NE(c.text.find("same task index"), std::string::npos) << c.text;
    EXPECT_NE(c.text.find(worker_name(port, 1) + " was claimed twice"), std::string::npos)
        << c.text;
  }
  EXPECT_LT(s, 15.0);  // not the 30 s rendezvous deadline
}

// Worker 1 of 2 never starts: the chief stops with Error(timeout) at the
// rendezvous deadline, naming the worker it waited for.
TEST(WorkerGroup, AMissingWorkerIsNamedAtTheRendezvousDeadline) {
  MR_SKIP_UNLESS_WORKERS_CAN_RUN();
  const int port = free_port();
  const auto t0 = Clock::now();
  const auto r = run_children(
      1,
      [&](int, const ChildPipe&) {
        WorkerGroup g(loopback_cluster(port, 2, 0), short_options(1, 2.0));
        return std::string("joined");
      },
      20.0);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_EQ(r[0].tag, 'E') << all_reports(r);
  EXPECT_EQ(r[0].kind, "timeout") << r[0].text;
  EXPECT_NE(r[0].text.find(worker_name(port, 1)), std::string::npos) << r[0].text;
  EXPECT_GE(s, 1.9);
  EXPECT_LT(s, 10.0);
}

// A 3-worker cluster whose worker 2 never starts: the chief and worker 1 both
// stop at the rendezvous deadline with a timeout naming worker 2.
TEST(WorkerGroup, AMissingWorkerIsNamedByEveryWorkerThatStarted) {
  MR_SKIP_UNLESS_WORKERS_CAN_RUN();
  const int port = free_port();
  const auto t0 = Clock::now();
  const auto r = run_children(
      2,
      [&](int k, const ChildPipe&) {
        WorkerGroup g(loopback_cluster(port, 3, k), short_options(1, 2.0));
        return std::string("joined");
      },
      20.0);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_EQ(r[0].tag, 'E') << all_reports(r);
  EXPECT_EQ(r[0].kind, "timeout") << r[0].text;
  EXPECT_NE(r[0].text.find(worker_name(port, 2)), std::string::npos) << r[0].text;
  EXPECT_EQ(r[0].text.find(worker_name(port, 1)), std::string::npos) << r[0].text;
  ASSERT_EQ(r[1].tag, 'E') << all_reports(r);
  // Worker 1 times out itself, or reads the chief's timeout from the store's
  // error key: either way the error names the worker that never came.
  EXPECT_EQ(r[1].kind, "timeout") << r[1].text;
  EXPECT_NE(r[1].text.find(worker_name(port, 2)), std::string::npos) << r[1].text;
  EXPECT_LT(s, 10.0);
}

// ---- a Model over the job ----

std::shared_ptr<const Graph> mlp() {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{12}));
  l.push_back(make_dense(16, Activation::relu, true, glorot_uniform(3), Initializer{}));
  l.push_back(make_dropout(0.3, 77));
  l.push_back(make_dense(5, Activation::linear, true, glorot_uniform(3), Initializer{}));
  return chain(std::move(l));
}

struct Data {
  std::vector<float> x, y;
  explicit Data(int64_t rows) {
    for (int64_t i = 0; i < rows * 12; ++i) x.push_back(std::cos(0.37f * static_cast<float>(i)));
    for (int64_t i = 0; i < rows; ++i) y.push_back(static_cast<float>(i % 5));
  }
  // Global batch `s` of an epoch of 27 rows in batches of 10: 10, 10, then
  // an uneven 7 (fewer rows than twice the 4 replicas).
  HostBatch batch(int s) const {
    const int64_t begin = (s % 3) * 10, rows = s % 3 == 2 ? 7 : 10;
    HostBatch b;
    b.rows = rows;
    b.parts = {HostComponent{x.data() + begin * 12, 12}, HostComponent{y.data() + begin, 1}};
    return b;
  }
};

CompileConfig adam() {
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::adam;
  c.optimizer.learning_rate = 0.01;
  c.loss.from_logits = true;
  return c;
}

// 2 processes x 2 CPU replicas train 9 steps on the same global batches as
// one process with one replica (a third child, so the test process never
// starts a thread): the final parameters agree within 1e-5 and are
// bit-identical between the processes and between each one's replicas.
TEST(WorkerGroup, TwoProcessesOfTwoReplicasTrainAsOneReplicaOnTheGlobalBatch) {
  MR_SKIP_UNLESS_WORKERS_CAN_RUN();
  const int steps = 9;
  const int port = free_port();
  const auto t0 = Clock::now();
  const auto r = run_children(
      3,
      [&](int k, const ChildPipe&) {
        const Data d(27);
        std::vector<float> p;
        if (k == 2) {  // the reference: one process, one replica
          Model m(mlp(), {DeviceSpec{DeviceKind::cpu, 0}}, 1);
          const std::vector<float> start = m.get_params();
          m.compile(adam());
          for (int s = 0; s < steps; ++s) m.train_step(d.batch(s));
          return bytes_of(m.get_params()) + bytes_of(start);
        }
        PlacementOptions po;
        po.collective_timeout = 10.0;
        po.workers =
            std::make_shared<WorkerGroup>(loopback_cluster(port, 2, k), short_options(2, 10.0));
        Model m(mlp(), {DeviceSpec{DeviceKind::cpu, 0}, DeviceSpec{DeviceKind::cpu, 1}}, po);
        if (m.global_replicas() != 4)
          return std::string("global replicas ") + std::to_string(m.global_replicas());
        m.compile(adam());
        for (int s = 0; s < steps; ++s) m.train_step(d.batch(s));
        if (m.iterations() != steps)
          return std::string("iterations ") + std::to_string(m.iterations());
        if (m.get_params(0) != m.get_params(1)) return std::string("the local replicas differ");
        return bytes_of(m.get_params());
      },
      60.0);
  ASSERT_TRUE(r[0].ok() && r[1].ok() && r[2].ok()) << all_reports(r);
  const std::vector<float> w0 = floats_of(r[0].text), both = floats_of(r[2].text);
  const std::vector<float> one(both.begin(),
                               both.begin() + static_cast<std::ptrdiff_t>(both.size() / 2));
  const std::vector<float> start(both.begin() + static_cast<std::ptrdiff_t>(both.size() / 2),
                                 both.end());
  ASSERT_FALSE(one.empty());
  ASSERT_EQ(w0.size(), one.size()) << r[0].text;
  EXPECT_EQ(r[0].text, r[1].text) << "the processes' parameters are not bit-identical";
  double num = 0, den = 0, moved = 0;
  for (size_t i = 0; i < one.size(); ++i) {
    num += (double{w0[i]} - one[i]) * (double{w0[i]} - one[i]);
    den += double{one[i]} * one[i];
  }
  for (size_t i = 0; i < one.size(); ++i)
    moved = std::max(moved, std::abs(double{one[i]} - start[i]));
  EXPECT_GT(moved, 1e-3);  // training moved the parameters: the comparison means something
  EXPECT_LT(std::sqrt(num / den), 1e-5);
  RecordProperty("seconds",
                 std::to_string(std::chrono::duration<double>(Clock::now() - t0).count()));
}

// Worker 2 of 3 trains 3 steps and leaves without goodbye (_exit in the middle
// of the job, as a crash would): the other two stop in their next step with
// Error(worker) naming it as dead, within a few seconds of its exit (the
// collectives' deadline is 60 s: the heartbeat and the closed connections
// tell, not the deadline).
TEST(WorkerGroup, AWorkerThatDiesMidTrainingIsNamedByEveryOtherWithinSeconds) {
  MR_SKIP_UNLESS_WORKERS_CAN_RUN();
  const int port = free_port();
  const auto r = run_children(
      3,
      [&](int k, const ChildPipe& pipe) {
        const Data d(27);
        PlacementOptions po;
        po.collective_timeout = 60.0;
        po.workers =
            std::make_shared<WorkerGroup>(loopback_cluster(port, 3, k), short_options(1, 60.0));
        Model m(mlp(), {DeviceSpec{DeviceKind::cpu, 0}}, po);
        m.compile(adam());
        for (int s = 0; s < 2000; ++s) {
          if (k == 2 && s == 3) {
            pipe.send(std::to_string(now_ns()));
            _exit(0);
          }
          try {
            m.train_step(d.batch(s));
          } catch (const Error& e) {
            pipe.send(std::to_string(now_ns()));
            pipe.send(std::to_string(s));
            throw;
          }
        }
        return std::string("trained 2000 steps");
      },
      40.0);
  const std::vector<std::string> died = split(r[2].early, '\n');
  ASSERT_EQ(r[2].tag, 0) << all_reports(r);
  ASSERT_EQ(died.size(), 1u) << r[2].early;
  const int64_t died_ns = std::stoll(died[0]);
  for (int k = 0; k < 2; ++k) {
    const ChildReport& c = r[static_cast<size_t>(k)];
    ASSERT_EQ(c.tag, 'E') << all_reports(r);
    EXPECT_EQ(c.kind, "worker") << c.text;
    EXPECT_NE(c.text.find(worker_name(port, 2) + " died"), std::string::npos) << c.text;
    const std::vector<std::string> when = split(c.early, '\n');
    ASSERT_EQ(when.size(), 2u) << c.early;
    const double s = static_cast<double>(std::stoll(when[0]) - died_ns) / 1e9;
    EXPECT_GT(s, 0.0);
    EXPECT_LT(s, 10.0) << "worker " << k << " took " << s << " s";
    EXPECT_EQ(when[1], "3") << "worker " << k << " failed in another step";
    RecordProperty("worker" + std::to_string(k) + "_seconds_to_error", std::to_string(s));
  }
}

}  // namespace
}  // namespace mr
