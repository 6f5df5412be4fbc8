// Convolutions on the GPU through cuDNN (cuda_conv_cudnn.cu) and through
// im2col (cuda_conv.cu), each pass against the CPU backend on the same inputs
// with the bound of test_backends.cpp: relative error (max |got - want| over
// max |want|) <= 1e-5, TF32 off. cuDNN passes must repeat bit for bit. A
// convnet trained on a GPU replica must match the CPU (1e-4 relative RMS of
// the weights after 5 Adam steps) and allocate nothing in its steps. Also,
// on every machine: the executor prepares each convolution of a model with
// its geometry and row count. Without a GPU the GPU tests skip (fail under
// MIRRORED_TEST_CUDA=1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "core/rng.h"
#include "tests/graphs.h"
#include "tests/test_util.h"
#include "train/model.h"

namespace mr {
namespace {

std::vector<float> random_vec(size_t n, uint32_t stream) { return uniform_floats(n, 4242, stream); }

double rel_err(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  double diff = 0.0, scale = 0.0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    diff = std::max(diff, std::fabs(double{got[i]} - want[i]));
    scale = std::max(scale, std::fabs(double{want[i]}));
  }
  return scale > 0.0 ? diff / scale : diff;
}

// Keras' geometry (as layers compute it): "same" puts the odd zero after.
ConvGeometry geometry(int64_t h, int64_t w, int64_t c, int64_t f, int64_t kh, int64_t kw, int64_t s,
                      int64_t d, bool same, int64_t groups) {
  ConvGeometry g;
  g.in_h = h, g.in_w = w, g.in_c = c, g.out_c = f, g.k_h = kh, g.k_w = kw;
  g.stride_h = h == 1 ? 1 : s, g.stride_w = s, g.dil_h = h == 1 ? 1 : d, g.dil_w = d;
  g.groups = groups;
  auto axis = [&](int64_t in, int64_t k, int64_t st, int64_t dl, int64_t* pad) {
    const int64_t span = (k - 1) * dl + 1;
    if (!same) return *pad = 0, (in - span) / st + 1;
    const int64_t out = (in + st - 1) / st;
    *pad = std::max<int64_t>((out - 1) * st + span - in, 0) / 2;
    return out;
  };
  g.out_h = axis(h, kh, g.stride_h, g.dil_h, &g.pad_top);
  g.out_w = axis(w, kw, g.stride_w, g.dil_w, &g.pad_left);
  return g;
}

// The three passes on one backend; returns y, dw, dx.
std::vector<std::vector<float>> passes(Backend& be, const ConvGeometry& g, int64_t rows) {
  const int64_t nx = rows * g.in_h * g.in_w * g.in_c, ny = rows * g.out_h * g.out_w * g.out_c;
  const int64_t nw = g.k_h * g.k_w * (g.in_c / g.groups) * g.out_c;
  auto put = [&](const std::vector<float>& v) {
    DeviceBuffer b = be.allocate(v.size() * sizeof(float));
    be.upload(b.get(), v.data(), v.size() * sizeof(float));
    return b;
  };
  auto F = [](DeviceBuffer& b) { return static_cast<float*>(b.get()); };
  DeviceBuffer x = put(random_vec(nx, 1)), w = put(random_vec(nw, 2)), dy = put(random_vec(ny, 3));
  DeviceBuffer y = put(std::vector<float>(ny)), dw = put(std::vector<float>(nw));
  DeviceBuffer dx = put(std::vector<float>(nx));
  DeviceBuffer col = put(std::vector<float>(rows * conv_columns_per_row(g) + 1));
  be.conv_forward(g, rows, F(x), F(w), F(y), F(col));
  be.conv_backward_filter(g, rows, F(x), F(dy), F(dw), F(col));
  be.conv_backward_data(g, rows, F(dy), F(w), F(dx), F(col));
  std::vector<std::vector<float>> out;
  for (auto* b : {&y, &dw, &dx}) {
    const int64_t n = b == &y ? ny : (b == &dw ? nw : nx);
    std::vector<float> v(static_cast<size_t>(n));
    be.download(v.data(), b->get(), v.size() * sizeof(float));
    out.push_back(std::move(v));
  }
  return out;
}

TEST(GpuConv, CudnnAndIm2colPassesMatchTheCpu) {
  MR_REQUIRE_GPUS(1);
  struct Case {
    ConvGeometry g;
    bool symmetric;  // Keras' padding is the same on both sides
  };
  const Case cases[] = {
      {geometry(28, 28, 1, 32, 3, 3, 1, 1, false, 1), true},  // the convnet's layers
      {geometry(13, 13, 32, 64, 3, 3, 1, 1, false, 1), true},
      {geometry(9, 8, 6, 4, 3, 2, 2, 1, true, 2), true},    // strides, groups
      {geometry(9, 9, 3, 5, 3, 3, 1, 2, true, 1), true},    // dilation
      {geometry(1, 17, 4, 6, 1, 5, 2, 1, true, 2), true},   // Conv1D
      {geometry(8, 7, 3, 4, 2, 2, 1, 1, true, 1), false},   // odd zero after: im2col
      {geometry(7, 5, 8, 6, 1, 1, 1, 1, false, 1), true}};  // pointwise: gemm
  const auto cpu = make_cpu_backend(0, 2);
  for (const Case& k : cases) {
    const ConvGeometry& g = k.g;
    const int64_t rows = 5;
    const std::string at = std::to_string(g.in_h) + "x" + std::to_string(g.in_w) + "x" +
                           std::to_string(g.in_c) + " -> " + std::to_string(g.out_c);
    const auto want = passes(*cpu, g, rows);
    // A fresh backend: nothing prepared, so im2col (or gemm) runs.
    {
      const auto dev = make_cuda_backend(0, 0);
      EXPECT_EQ(dev->conv_path(g, rows), g.pointwise() ? "gemm" : "im2col") << at;
      const auto got = passes(*dev, g, rows);
      for (size_t i = 0; i < 3; ++i) EXPECT_LE(rel_err(got[i], want[i]), 1e-5) << at << " " << i;
    }
    const auto dev = make_cuda_backend(0, 0);
    dev->prepare_conv(g, 8);  // as Executor::reserve does, for up to 8 rows
    const std::string path = dev->conv_path(g, rows);
    if (g.pointwise())
      EXPECT_EQ(path, "gemm") << at;
    else if (!built_with_cudnn() || !k.symmetric)
      EXPECT_EQ(path, "im2col") << at;
    else if (g.groups == 1)  // grouped NHWC may lack a deterministic algorithm
      EXPECT_EQ(path, "cudnn") << at;
    EXPECT_EQ(dev->conv_path(g, 9), g.pointwise() ? "gemm" : "im2col") << at << ": beyond 8 rows";
    const auto got = passes(*dev, g, rows);
    for (size_t i = 0; i < 3; ++i)
      EXPECT_LE(rel_err(got[i], want[i]), 1e-5) << at << " " << path << " " << i;
    // Deterministic: a second run gives the same bits.
    EXPECT_EQ(passes(*dev, g, rows), got) << at << " " << path;
  }
}

// Records what the executor asks the backend to prepare.
class RecordingCpu : public CpuBackend {
 public:
  RecordingCpu() : CpuBackend(0, 1) {}
  void prepare_conv(const ConvGeometry& g, int64_t max_rows) override {
    prepared.push_back({g.in_h, g.in_w, g.in_c, g.out_c, g.groups, max_rows});
  }
  std::vector<std::vector<int64_t>> prepared;
};

std::shared_ptr<const Graph> small_convnet() {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{12, 12, 1}));
  l.push_back(make_layer(
      "Conv2D", Json{{"name", "c1"}, {"filters", 8}, {"kernel_size", 3}, {"activation", "relu"}},
      21));
  l.push_back(make_layer("MaxPooling2D", Json{{"name", "p"}, {"pool_size", 2}}, 0));
  l.push_back(make_layer("Conv2D",
                         Json{{"name", "c2"},
                              {"filters", 16},
                              {"kernel_size", 3},
                              {"padding", "same"},
                              {"activation", "relu"}},
                         22));
  l.push_back(make_flatten());
  l.push_back(make_dense(10, Activation::linear, true, glorot_uniform(23), Initializer{}));
  return chain(std::move(l));
}

TEST(Conv, ExecutorPreparesEveryConvolutionOutsideTheStep) {
  const auto g = small_convnet();
  RecordingCpu be;
  Executor ex(*g, be);
  ex.reserve(16);
  ex.reserve(8);  // smaller: nothing new
  ex.reserve(32);
  const std::vector<std::vector<int64_t>> want{
      {12, 12, 1, 8, 1, 16}, {5, 5, 8, 16, 1, 16}, {12, 12, 1, 8, 1, 32}, {5, 5, 8, 16, 1, 32}};
  EXPECT_EQ(be.prepared, want);
}

struct Data {
  std::vector<float> x, y;
};

Data batch(int64_t rows, uint32_t seed) {
  const RandomStream rs(99, 0, seed);
  Data d{std::vector<float>(static_cast<size_t>(rows * 144)), {}};
  for (size_t i = 0; i < d.x.size(); ++i) d.x[i] = rs.uniform(i);
  for (int64_t r = 0; r < rows; ++r) d.y.push_back(static_cast<float>((r * 7 + seed) % 10));
  return d;
}

void step(Model& m, int64_t rows, uint32_t seed) {
  const Data d = batch(rows, seed);
  HostBatch b;
  b.rows = rows;
  b.parts = {HostComponent{d.x.data(), 144}, HostComponent{d.y.data(), 1}};
  m.train_step(b);
}

std::unique_ptr<Model> compiled(DeviceSpec dev) {
  auto m =
      std::make_unique<Model>(small_convnet(), std::vector<DeviceSpec>{dev}, PlacementOptions{});
  CompileConfig c;
  c.loss.from_logits = true;
  m->compile(c);
  return m;
}

// 5 Adam steps (batches of 64, the last one 37 rows) on one GPU replica: the
// weights match one CPU replica, and once the first step sized the buffers
// (and prepared the convolutions: cuDNN's plans and workspace when built with
// it) no step adds a cudaMalloc / cudaHostAlloc.
TEST(GpuConv, ConvnetTrainsAsOnTheCpuAndStepsAllocateNothing) {
  MR_REQUIRE_GPUS(1);
  const auto cpu = compiled(DeviceSpec{DeviceKind::cpu, 0});
  const auto gpu = compiled(DeviceSpec{DeviceKind::cuda, 0});
  ASSERT_EQ(gpu->get_params(), cpu->get_params());
  for (Model* m : {cpu.get(), gpu.get()}) step(*m, 64, 0);
  gpu->read_metrics();  // waits for the device
  const int64_t before = gpu->replica_backend(0).system_allocations();
  for (int s = 1; s < 5; ++s)
    for (Model* m : {cpu.get(), gpu.get()}) step(*m, s == 4 ? 37 : 64, static_cast<uint32_t>(s));
  gpu->read_metrics();
  cpu->read_metrics();
  EXPECT_EQ(gpu->replica_backend(0).system_allocations(), before);
  EXPECT_LT(rms_rel(gpu->get_params(), cpu->get_params()), 1e-4);
}

}  // namespace
}  // namespace mr
