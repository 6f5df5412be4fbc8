// Step time of the vignette's model (784-256-256-10, Adam, sparse CE from
// logits) on gpu:0, at batch 64, 512 and 4096, through Model::train_step: the
// code path fit() uses, with CUDA graphs (contender "mirrored": the default)
// and without ("mirrored_eager": options(mirrored.cuda_graphs = FALSE)). Each
// size runs `warm` untimed steps, then `steps` timed ones whose total ends
// with a read of the device metrics (which waits for the GPU); prints one
// JSON object per batch size and contender. Also measures
// - the FP32 SGEMM ceiling (cuBLAS, 8192^3) for the "fraction of ceiling"
//   figure;
// - "cublas_step_gemms": cuBLAS alone running the step's own eight products
//   (forward x W for the three layers; backward dW = x^T dy for the three and
//   dx = dy W^T for the two inner ones) back to back, the floor the
//   "batch 4096 >= 70% of cuBLAS alone" goal is measured against.
//
//   bench_mlp_gpu [steps=500] [warm=50] [tf32=0] [precision=f32]
//
// precision "bf16" (the mixed_bfloat16 policy, against strict FP32 with TF32
// off) needs mixed precision in the core (issue 14's bf16 GEMMs): until the
// model can be compiled under a mixed policy this exits with status 3 and
// says so, rather than timing something else.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "core/device_info.h"
#include "core/rng.h"
#include "tests/graphs.h"
#include "train/model.h"

using namespace mr;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

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
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) be.gemm(false, false, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
  be.synchronize();
  return 2.0 * n * n * n * reps / seconds_since(t0) / 1e12;
}

// µs per step of the step's own GEMMs alone (row-major, as the dense layers
// call them), on one backend with the same math mode.
double step_gemms_us(int64_t batch, bool tf32, int steps, int warm) {
  CudaBackend be(0, 0);
  be.set_tf32(tf32);
  const int64_t dims[4] = {784, 256, 256, 10};
  std::vector<DeviceBuffer> act, grad, w, dw;
  for (int l = 0; l < 4; ++l) {
    act.push_back(be.allocate(static_cast<size_t>(batch * dims[l]) * 4));
    grad.push_back(be.allocate(static_cast<size_t>(batch * dims[l]) * 4));
  }
  for (int l = 0; l < 3; ++l) {
    w.push_back(be.allocate(static_cast<size_t>(dims[l] * dims[l + 1]) * 4));
    dw.push_back(be.allocate(static_cast<size_t>(dims[l] * dims[l + 1]) * 4));
  }
  auto f = [](DeviceBuffer& b) { return static_cast<float*>(b.get()); };
  for (int l = 0; l < 4; ++l) {
    be.fill(batch * dims[l], f(act[l]), 0.5f);
    be.fill(batch * dims[l], f(grad[l]), 0.25f);
  }
  for (int l = 0; l < 3; ++l) be.fill(dims[l] * dims[l + 1], f(w[l]), 0.01f);
  auto step = [&] {
    for (int l = 0; l < 3; ++l)  // y = x W
      be.gemm(false, false, batch, dims[l + 1], dims[l], 1.0f, f(act[l]), dims[l], f(w[l]),
              dims[l + 1], 0.0f, f(act[l + 1]), dims[l + 1]);
    for (int l = 2; l >= 0; --l) {
      // dW = x^T dy
      be.gemm(true, false, dims[l], dims[l + 1], batch, 1.0f, f(act[l]), dims[l], f(grad[l + 1]),
              dims[l + 1], 0.0f, f(dw[l]), dims[l + 1]);
      // dx = dy W^T (not for the input layer)
      if (l > 0)
        be.gemm(false, true, batch, dims[l], dims[l + 1], 1.0f, f(grad[l + 1]), dims[l + 1],
                f(w[l]), dims[l + 1], 0.0f, f(grad[l]), dims[l]);
    }
  };
  for (int i = 0; i < warm; ++i) step();
  be.synchronize();
  const auto t0 = Clock::now();
  for (int i = 0; i < steps; ++i) step();
  be.synchronize();
  return seconds_since(t0) / steps * 1e6;
}

struct Timing {
  double us = 0;
  int64_t replays = 0;
};

Timing mirrored_step(int64_t batch, bool tf32, bool graphs, int steps, int warm) {
  PlacementOptions o;
  o.tf32 = tf32;
  DeviceSpec d{DeviceKind::cuda, 0};
  Model m(vignette_mlp(0), {d}, o);
  CompileConfig c;
  c.loss.from_logits = true;
  c.metrics.push_back(MetricConfig{});
  m.compile(c);
  m.set_cuda_graphs(graphs);
  const RandomStream rs(1, 0, 0);
  std::vector<float> x(static_cast<size_t>(batch * 784)), y(static_cast<size_t>(batch));
  for (size_t i = 0; i < x.size(); ++i) x[i] = rs.uniform(i);
  for (int64_t r = 0; r < batch; ++r) y[static_cast<size_t>(r)] = static_cast<float>(r % 10);
  HostBatch hb;
  hb.rows = batch;
  hb.parts = {HostComponent{x.data(), 784}, HostComponent{y.data(), 1}};
  for (int i = 0; i < warm; ++i) m.train_step(hb);
  m.read_metrics();
  const auto t0 = Clock::now();
  for (int i = 0; i < steps; ++i) m.train_step(hb);
  m.read_metrics();  // waits for the GPU
  return {seconds_since(t0) / steps * 1e6, m.cuda_graph_stats().replays};
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 500;
  const int warm = argc > 2 ? std::atoi(argv[2]) : 50;
  const bool tf32 = argc > 3 && std::atoi(argv[3]) != 0;
  const char* precision = argc > 4 ? argv[4] : "f32";
  if (std::strcmp(precision, "f32") != 0) {
    if (std::strcmp(precision, "bf16") == 0 || std::strcmp(precision, "f16") == 0) {
      std::fprintf(stderr,
                   "bench_mlp_gpu: precision %s needs mixed precision (a model compiled under "
                   "the mixed_%s policy), which this build's core does not have\n",
                   precision, std::strcmp(precision, "bf16") == 0 ? "bfloat16" : "float16");
      return 3;
    }
    std::fprintf(stderr, "bench_mlp_gpu: precision must be f32, bf16 or f16, not %s\n", precision);
    return 2;
  }
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  const double ceiling = sgemm_ceiling_tflops();
  // Forward 2 B P, backward 4 B P flops for the dense layers' weights.
  const double params = 784.0 * 256 + 256 + 256.0 * 256 + 256 + 256.0 * 10 + 10;
  for (int64_t batch : {int64_t{64}, int64_t{512}, int64_t{4096}}) {
    for (bool graphs : {true, false}) {
      const Timing t = mirrored_step(batch, tf32, graphs, steps, warm);
      const double tflops = 6.0 * batch * params / (t.us * 1e-6) / 1e12;
      std::printf(
          "{\"contender\": \"%s\", \"batch\": %lld, \"us_per_step\": %.3f, \"tflops\": %.3f, "
          "\"sgemm_ceiling_tflops\": %.3f, \"graph_replays\": %lld, \"tf32\": %s, "
          "\"precision\": \"f32\"}\n",
          graphs ? "mirrored" : "mirrored_eager", static_cast<long long>(batch), t.us, tflops,
          ceiling, static_cast<long long>(t.replays), tf32 ? "true" : "false");
      std::fflush(stdout);
    }
    const double g = step_gemms_us(batch, tf32, steps, warm);
    std::printf(
        "{\"contender\": \"cublas_step_gemms\", \"batch\": %lld, \"us_per_step\": %.3f, "
        "\"tf32\": %s, \"precision\": \"f32\"}\n",
        static_cast<long long>(batch), g, tf32 ? "true" : "false");
    std::fflush(stdout);
  }
  return 0;
}
