// Training step time with gradient buckets against one fused all-reduce, on
// CPU replicas (train/grad_buckets.h). On CPU replicas the thread all-reduce
// is synchronous, so a bucket launched during backward runs inline: this
// measures what the buckets cost there (more, smaller collectives), not an
// overlap. Prints the CPU model and, per model and mode, the median ms/step.
// Usage: bench_buckets [replicas=2] [steps=60] [batch=64]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "tests/graphs.h"
#include "train/model.h"

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

std::shared_ptr<const mr::Graph> mlp(int64_t width) {
  std::vector<std::unique_ptr<mr::Layer>> l;
  l.push_back(mr::make_input_layer(mr::Shape{784}));
  l.push_back(
      mr::make_dense(width, mr::Activation::relu, true, mr::glorot_uniform(1), mr::Initializer{}));
  l.push_back(
      mr::make_dense(width, mr::Activation::relu, true, mr::glorot_uniform(2), mr::Initializer{}));
  l.push_back(
      mr::make_dense(10, mr::Activation::linear, true, mr::glorot_uniform(3), mr::Initializer{}));
  return mr::chain(std::move(l));
}

}  // namespace

int main(int argc, char** argv) {
  const int replicas = argc > 1 ? std::atoi(argv[1]) : 2;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 60;
  const int64_t rows = argc > 3 ? std::atoll(argv[3]) : 64;
  std::printf("CPU: %s; %d CPU replicas, batch %lld, Adam, median of %d steps\n",
              cpu_model().c_str(), replicas, static_cast<long long>(rows), steps);
  std::printf("%-22s %-26s %8s %12s\n", "model", "all-reduce", "buckets", "ms/step");
  std::vector<float> x(static_cast<size_t>(rows * 784)), y(static_cast<size_t>(rows * 10), 0.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * i));
  for (int64_t r = 0; r < rows; ++r) y[static_cast<size_t>(r * 10 + r % 10)] = 1.0f;
  mr::HostBatch batch;
  batch.rows = rows;
  batch.parts = {{x.data(), 784}, {y.data(), 10}};
  struct Mode {
    const char* name;
    bool overlap;
    int64_t bytes;
  };
  const Mode modes[] = {{"fused (buckets off)", false, 0},
                        {"buckets, default sizes", true, 0},
                        {"buckets of 256 KiB", true, 256 << 10},
                        {"buckets of 64 KiB", true, 64 << 10}};
  for (int64_t width : {256, 2048}) {
    char label[64];
    std::snprintf(label, sizeof label, "784-%lld-%lld-10", static_cast<long long>(width),
                  static_cast<long long>(width));
    for (const Mode& m : modes) {
      std::vector<mr::DeviceSpec> devs;
      for (int i = 0; i < replicas; ++i) devs.push_back(mr::DeviceSpec{mr::DeviceKind::cpu, i});
      mr::Model model(mlp(width), devs, std::max(1, 2 / replicas));  // 2 cores in all
      model.set_overlap(m.overlap);
      model.set_bytes_per_pack(m.bytes);
      mr::CompileConfig c;
      c.optimizer.kind = mr::OptimizerConfig::Kind::adam;
      c.optimizer.learning_rate = 1e-4;
      c.loss.kind = mr::LossKind::categorical_crossentropy;
      c.loss.name = "categorical_crossentropy";
      c.loss.from_logits = true;
      model.compile(c);
      for (int s = 0; s < 5; ++s) model.train_step(batch);  // warm-up
      std::vector<double> ms;
      for (int s = 0; s < steps; ++s) {
        const auto t0 = std::chrono::steady_clock::now();
        model.train_step(batch);
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
      }
      std::nth_element(ms.begin(), ms.begin() + static_cast<long>(ms.size() / 2), ms.end());
      std::printf("%-22s %-26s %8zu %12.3f\n", label, m.name,
                  m.overlap ? model.grad_buckets().plan().size() : size_t{1}, ms[ms.size() / 2]);
    }
  }
  return 0;
}
