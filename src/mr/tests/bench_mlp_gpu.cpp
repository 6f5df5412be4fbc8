// Step time of the vignette's model (784-256-256-10, Adam, sparse CE from
// logits) on gpu:0, at batch 64, 512 and 4096, through Model::train_step: the
// code path fit() uses, with CUDA graphs (contender "mirrored": the default)
// and without ("mirrored_eager": options(mirrored.cuda_graphs = FALSE)). Each
// size runs `warm` untimed steps, then `steps` timed ones whose total ends
// with a read of the device metrics (which waits for the GPU); prints one
// JSON object per batch size and contender. Also measures
// - the GEMM ceiling (cuBLAS, 8192^3, on uniform random data in [-1, 1): zeros
//   run faster and would understate the fraction): FP32 SGEMM, or the 16-bit
//   GEMM with f32 accumulation (Backend::gemm_lowp) of the precision asked
//   for, for the "fraction of ceiling" figure;
// - "cublas_step_gemms": cuBLAS alone running the step's own eight products
//   (forward x W for the three layers; backward dW = x^T dy for the three and
//   dx = dy W^T for the two inner ones) back to back, on random data, in the
//   same precision: the floor the "batch 4096 >= 70% of cuBLAS alone" goal is
//   measured against.
//
//   bench_mlp_gpu [steps=500] [warm=50] [tf32=0] [precision=f32]
//
// precision "bf16": every Dense layer under the mixed_bfloat16 policy (Keras'
// global policy); "f16": mixed_float16, with Keras' dynamic loss scaling
// (LossScaleOptimizer's defaults, as compile() sets it under that policy).
// The contenders "mirrored" / "mirrored_eager" keep their names; the JSON
// says the precision.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "core/device_info.h"
#include "core/json.h"
#include "core/rng.h"
#include "nn/dtype_policy.h"
#include "tests/graphs.h"
#include "train/model.h"

using namespace mr;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// "f32", "bf16" or "f16": the GEMM inputs' type (f32: none, plain gemm).
struct Precision {
  const char* name = "f32";
  bool lowp = false;
  DType type = DType::f32;
  const char* policy = nullptr;  // the Dense layers' dtype policy, when mixed
};

// n floats uniform in [-1, 1) (counter-based: the same data every run) on be.
void fill_random(CudaBackend& be, float* dst, int64_t n, uint64_t seed) {
  const RandomStream rs(seed, 0, 0);
  std::vector<float> h(static_cast<size_t>(n));
  for (size_t i = 0; i < h.size(); ++i) h[i] = 2.0f * rs.uniform(i) - 1.0f;
  be.upload(dst, h.data(), h.size() * sizeof(float));
}

// A GEMM operand of rows x cols random values, in the precision's input type
// (16-bit values rounded from the f32 ones by cast_lowp).
struct Operand {
  DeviceBuffer f32{nullptr, DeviceFree{}}, lowp{nullptr, DeviceFree{}};
  const void* data(const Precision& p) const { return p.lowp ? lowp.get() : f32.get(); }
  float* f() const { return static_cast<float*>(f32.get()); }
};
Operand random_operand(CudaBackend& be, const Precision& p, int64_t n, uint64_t seed) {
  Operand o;
  o.f32 = be.allocate(static_cast<size_t>(n) * 4);
  fill_random(be, o.f(), n, seed);
  if (p.lowp) {
    o.lowp = be.allocate(static_cast<size_t>(n) * 2);
    be.cast_lowp(p.type, n, o.f(), o.lowp.get());
  }
  return o;
}

// C (f32) = A B, row-major, in the precision (f32: gemm; else gemm_lowp).
void product(CudaBackend& be, const Precision& p, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
             const Operand& a, int64_t lda, const Operand& b, int64_t ldb, float* c, int64_t ldc) {
  if (p.lowp)
    be.gemm_lowp(p.type, ta, tb, m, n, k, 1.0f, a.data(p), lda, b.data(p), ldb, 0.0f, c, ldc);
  else
    be.gemm(ta, tb, m, n, k, 1.0f, a.f(), lda, b.f(), ldb, 0.0f, c, ldc);
}

double gemm_ceiling_tflops(const Precision& p) {
  CudaBackend be(0, 0);
  const int64_t n = 8192;
  const Operand a = random_operand(be, p, n * n, 11), b = random_operand(be, p, n * n, 12);
  auto c = be.allocate(static_cast<size_t>(n * n) * 4);
  auto* C = static_cast<float*>(c.get());
  for (int i = 0; i < 3; ++i) product(be, p, false, false, n, n, n, a, n, b, n, C, n);
  be.synchronize();
  const int reps = 10;
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) product(be, p, false, false, n, n, n, a, n, b, n, C, n);
  be.synchronize();
  return 2.0 * n * n * n * reps / seconds_since(t0) / 1e12;
}

// µs per step of the step's own GEMMs alone (row-major, as the dense layers
// call them), on one backend with the same math mode and precision.
double step_gemms_us(int64_t batch, bool tf32, const Precision& p, int steps, int warm) {
  CudaBackend be(0, 0);
  be.set_tf32(tf32);
  const int64_t dims[4] = {784, 256, 256, 10};
  std::vector<Operand> act, grad, w;
  std::vector<DeviceBuffer> out, dw;
  for (int l = 0; l < 4; ++l) {
    act.push_back(random_operand(be, p, batch * dims[l], 20 + l));
    grad.push_back(random_operand(be, p, batch * dims[l], 30 + l));
    out.push_back(be.allocate(static_cast<size_t>(batch * dims[l]) * 4));
  }
  for (int l = 0; l < 3; ++l) {
    w.push_back(random_operand(be, p, dims[l] * dims[l + 1], 40 + l));
    dw.push_back(be.allocate(static_cast<size_t>(dims[l] * dims[l + 1]) * 4));
  }
  auto f = [](DeviceBuffer& b) { return static_cast<float*>(b.get()); };
  // The products write f32 buffers of their own (the 16-bit inputs stay the
  // random ones): the same shapes and types as the step's, not its values.
  auto step = [&] {
    for (int l = 0; l < 3; ++l)  // y = x W
      product(be, p, false, false, batch, dims[l + 1], dims[l], act[l], dims[l], w[l], dims[l + 1],
              f(out[l + 1]), dims[l + 1]);
    for (int l = 2; l >= 0; --l) {
      // dW = x^T dy
      product(be, p, true, false, dims[l], dims[l + 1], batch, act[l], dims[l], grad[l + 1],
              dims[l + 1], f(dw[l]), dims[l + 1]);
      // dx = dy W^T (not for the input layer)
      if (l > 0)
        product(be, p, false, true, batch, dims[l], dims[l + 1], grad[l + 1], dims[l + 1], w[l],
                dims[l + 1], f(out[l]), dims[l]);
    }
  };
  for (int i = 0; i < warm; ++i) step();
  be.synchronize();
  const auto t0 = Clock::now();
  for (int i = 0; i < steps; ++i) step();
  be.synchronize();
  return seconds_since(t0) / steps * 1e6;
}

// The vignette's MLP (tests/graphs.h' vignette_mlp) with every Dense layer
// under `policy` (null: float32).
std::shared_ptr<const Graph> vignette_mlp_policy(const char* policy) {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{784}));
  l.push_back(make_dense(256, Activation::relu, true, glorot_uniform(0), Initializer{}));
  l.push_back(make_dense(256, Activation::relu, true, glorot_uniform(0), Initializer{}));
  l.push_back(make_dense(10, Activation::linear, true, glorot_uniform(0), Initializer{}));
  if (policy != nullptr)
    for (size_t i = 1; i < l.size(); ++i)
      l[i]->set_dtype_policy(parse_dtype_policy(Json(policy), "dense"));
  return chain(std::move(l));
}

struct Timing {
  double us = 0;
  int64_t replays = 0;
};

Timing mirrored_step(int64_t batch, bool tf32, const Precision& p, bool graphs, int steps,
                     int warm) {
  PlacementOptions o;
  o.tf32 = tf32;
  DeviceSpec d{DeviceKind::cuda, 0};
  Model m(vignette_mlp_policy(p.policy), {d}, o);
  CompileConfig c;
  c.loss.from_logits = true;
  c.metrics.push_back(MetricConfig{});
  // mixed_float16: Keras' compile() wraps the optimizer in a
  // LossScaleOptimizer (dynamic scaling, its default settings).
  c.loss_scale.dynamic = p.type == DType::f16;
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
  Precision p;
  p.name = argc > 4 ? argv[4] : "f32";
  if (std::strcmp(p.name, "bf16") == 0) {
    p = Precision{"bf16", true, DType::bf16, "mixed_bfloat16"};
  } else if (std::strcmp(p.name, "f16") == 0) {
    p = Precision{"f16", true, DType::f16, "mixed_float16"};
  } else if (std::strcmp(p.name, "f32") != 0) {
    std::fprintf(stderr, "bench_mlp_gpu: precision must be f32, bf16 or f16, not %s\n", p.name);
    return 2;
  }
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  const double ceiling = gemm_ceiling_tflops(p);
  // Forward 2 B P, backward 4 B P flops for the dense layers' weights.
  const double params = 784.0 * 256 + 256 + 256.0 * 256 + 256 + 256.0 * 10 + 10;
  for (int64_t batch : {int64_t{64}, int64_t{512}, int64_t{4096}}) {
    for (bool graphs : {true, false}) {
      const Timing t = mirrored_step(batch, tf32, p, graphs, steps, warm);
      const double tflops = 6.0 * batch * params / (t.us * 1e-6) / 1e12;
      std::printf(
          "{\"contender\": \"%s\", \"batch\": %lld, \"us_per_step\": %.3f, \"tflops\": %.3f, "
          "\"%s_ceiling_tflops\": %.3f, \"graph_replays\": %lld, \"tf32\": %s, "
          "\"precision\": \"%s\"}\n",
          graphs ? "mirrored" : "mirrored_eager", static_cast<long long>(batch), t.us, tflops,
          p.lowp ? "gemm_lowp" : "sgemm", ceiling, static_cast<long long>(t.replays),
          tf32 ? "true" : "false", p.name);
      std::fflush(stdout);
    }
    const double g = step_gemms_us(batch, tf32, p, steps, warm);
    std::printf(
        "{\"contender\": \"cublas_step_gemms\", \"batch\": %lld, \"us_per_step\": %.3f, "
        "\"tf32\": %s, \"precision\": \"%s\"}\n",
        static_cast<long long>(batch), g, tf32 ? "true" : "false", p.name);
    std::fflush(stdout);
  }
  return 0;
}
