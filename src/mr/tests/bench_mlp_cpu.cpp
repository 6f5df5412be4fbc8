// Step time of the vignette's model (784-256-256-10, relu, Adam, sparse CE
// from logits, one accuracy metric) on one CPU replica through
// Model::train_step: the C++ part of what fit() runs per step, without R's
// batch assembly and callbacks. Runs `warm` untimed steps, then `steps` timed
// ones, and prints one JSON line with the mean step time and the first steps'
// times (a cold model: page faults and first-use set-up show there).
//
//   bench_mlp_cpu [threads=2] [steps=2000] [warm=200] [batch=64]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/rng.h"
#include "tests/graphs.h"
#include "train/model.h"

using namespace mr;

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 2000;
  const int warm = argc > 3 ? std::atoi(argv[3]) : 200;
  const int64_t batch = argc > 4 ? std::atoll(argv[4]) : 64;
  using Clock = std::chrono::steady_clock;
  const auto us_since = [](Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  };
  Model m(vignette_mlp(1), {DeviceSpec{DeviceKind::cpu, 0}}, threads);
  CompileConfig c;
  c.loss.from_logits = true;
  c.metrics.push_back(MetricConfig{});
  m.compile(c);
  const RandomStream rs(1, 0, 0);
  std::vector<float> x(static_cast<size_t>(batch * 784)), y(static_cast<size_t>(batch));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(static_cast<int>(rs.uniform(i) * 256.0f));
  for (int64_t r = 0; r < batch; ++r) y[static_cast<size_t>(r)] = static_cast<float>(r % 10);
  HostBatch hb;
  hb.rows = batch;
  hb.parts = {HostComponent{x.data(), 784}, HostComponent{y.data(), 1}};
  double first[5];
  for (double& f : first) {
    const auto t0 = Clock::now();
    m.train_step(hb);
    f = us_since(t0);
  }
  for (int i = 0; i < warm; ++i) m.train_step(hb);
  const auto t0 = Clock::now();
  for (int i = 0; i < steps; ++i) m.train_step(hb);
  const double us = us_since(t0) / steps;
  const std::vector<double> logs = m.read_metrics();
  std::printf(
      "{\"threads\": %d, \"batch\": %lld, \"us_per_step\": %.2f, \"first_steps_us\": [%.0f, %.0f, "
      "%.0f, %.0f, %.0f], \"loss\": %.4f}\n",
      threads, static_cast<long long>(batch), us, first[0], first[1], first[2], first[3], first[4],
      logs.empty() ? 0.0 : logs[0]);
  return 0;
}
