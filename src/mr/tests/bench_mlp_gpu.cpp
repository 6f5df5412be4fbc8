// Step time of the vignette's model (784-256-256-10, Adam, sparse CE from
// logits) on gpu:0, at batch 64, 512 and 4096, through Model::train_step: the
// code path fit() uses. Each size runs `warm` untimed steps, then `steps`
// timed ones whose total ends with a read of the device metrics (which waits
// for the GPU); prints one JSON object per batch size. Also measures the
// FP32 SGEMM ceiling (cuBLAS, 8192^3) for the "fraction of ceiling" figure.
//
//   bench_mlp_gpu [steps=500] [warm=50] [tf32=0]
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "core/device_info.h"
#include "core/rng.h"
#include "tests/graphs.h"
#include "train/model.h"

using namespace mr;

namespace {

double sgemm_ceiling_tflops() {
  CudaBackend be(0, 0);
  const int64_t n = 8192;
  auto a = be.allocate(n * n * 4), b = be.allocate(n * n * 4), c = be.allocate(n * n * 4);
  auto* A = static_cast<float*>(a.get());
  auto* B = static_cast<float*>(b.get());
  auto* C = static_cast<float*>(c.get());
  for (int i = 0; i < 3; ++i) be.gemm(false, false, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
  be.synchronize();
  const int reps = 10;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) be.gemm(false, false, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
  be.synchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return 2.0 * n * n * n * reps / s / 1e12;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 500;
  const int warm = argc > 2 ? std::atoi(argv[2]) : 50;
  const bool tf32 = argc > 3 && std::atoi(argv[3]) != 0;
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  const double ceiling = sgemm_ceiling_tflops();
  for (int64_t batch : {int64_t{64}, int64_t{512}, int64_t{4096}}) {
    PlacementOptions o;
    o.tf32 = tf32;
    DeviceSpec d{DeviceKind::cuda, 0};
    Model m(vignette_mlp(0), {d}, o);
    CompileConfig c;
    c.loss.from_logits = true;
    c.metrics.push_back(MetricConfig{});
    m.compile(c);
    const RandomStream rs(1, 0, 0);
    std::vector<float> x(static_cast<size_t>(batch * 784)), y(static_cast<size_t>(batch));
    for (size_t i = 0; i < x.size(); ++i) x[i] = rs.uniform(i);
    for (int64_t r = 0; r < batch; ++r) y[static_cast<size_t>(r)] = static_cast<float>(r % 10);
    HostBatch hb;
    hb.rows = batch;
    hb.parts = {HostComponent{x.data(), 784}, HostComponent{y.data(), 1}};
    for (int i = 0; i < warm; ++i) m.train_step(hb);
    m.read_metrics();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) m.train_step(hb);
    m.read_metrics();  // waits for the GPU
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double us = s / steps * 1e6;
    // Forward 2 B P, backward 4 B P flops for the dense layers' weights.
    const double params = 784.0 * 256 + 256 + 256.0 * 256 + 256 + 256.0 * 10 + 10;
    const double tflops = 6.0 * batch * params / (us * 1e-6) / 1e12;
    std::printf(
        "{\"contender\": \"mirrored\", \"batch\": %lld, \"us_per_step\": %.3f, \"tflops\": %.3f, "
        "\"sgemm_ceiling_tflops\": %.3f, \"tf32\": %s}\n",
        static_cast<long long>(batch), us, tflops, ceiling, tf32 ? "true" : "false");
  }
  return 0;
}
