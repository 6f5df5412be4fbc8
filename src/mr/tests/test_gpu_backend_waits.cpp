// A CUDA backend's waits, workspace and current device:
// - download() waits for its stream with the polled, deadline-aware wait
//   *before* copying into pageable memory (a pageable copy blocks inside the
//   driver until everything queued before it ran: no deadline, no abort);
// - cuBLAS' workspace is the backend's, from its allocator (32 MiB), so eager
//   and captured GEMMs use the same memory and a capture allocates nothing;
// - every public method makes the backend's device current first (pooling,
//   convolutions: launches into another device's stream fail).
// Skipped without a CUDA device (failures under MIRRORED_TEST_CUDA=1); the
// current-device test needs two.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "build_config.h"
#include "core/conv_geometry.h"
#include "core/device_info.h"
#include "core/error.h"
#include "core/wait.h"
#include "tests/test_util.h"

#if MR_WITH_CUDA
#include <cuda_runtime.h>

#include "backends/cuda/cuda_backend.h"
#endif

namespace mr {
namespace {

#if MR_WITH_CUDA

// ~10 TFLOP of SGEMMs queued on `be`: well over a millisecond on any GPU.
struct Busy {
  explicit Busy(Backend& b) : be(b) {
    a = be.allocate(kN * kN * sizeof(float));
    c = be.allocate(kN * kN * sizeof(float));
  }
  void queue() {
    for (int i = 0; i < 10; ++i)
      be.gemm(false, false, kN, kN, kN, 1.0f, static_cast<const float*>(a.get()), kN,
              static_cast<const float*>(a.get()), kN, 0.0f, static_cast<float*>(c.get()), kN);
  }
  static constexpr int64_t kN = 8192;
  Backend& be;
  DeviceBuffer a{nullptr, DeviceFree{}}, c{nullptr, DeviceFree{}};
};

TEST(GpuBackendWaits, ADownloadBehindBusyWorkHonoursTheDeadlineAndTheAbortFlag) {
  MR_REQUIRE_GPUS(1);
  auto be = make_cuda_backend(0, 0);
  Busy busy(*be);
  auto small = be->allocate(64);
  float host[16] = {};
  busy.queue();
  be->set_wait_limits(WaitLimits{1e-4, nullptr, nullptr});
  try {
    be->download(host, small.get(), sizeof(host));
    ADD_FAILURE() << "a download behind ~10 TFLOP of queued work returned within a 0.1 ms "
                     "deadline: it waited inside the driver (pageable copy) instead of polling";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::timeout) << e.what();
    EXPECT_NE(std::string(e.what()).find("download"), std::string::npos) << e.what();
  }
  std::atomic<bool> abort{true};
  busy.queue();
  be->set_wait_limits(WaitLimits{600.0, &abort, nullptr});
  EXPECT_THROW(be->download(host, small.get(), sizeof(host)), CollectiveAborted)
      << "a download ignored the abort flag";
  abort = false;
  be->fill(16, static_cast<float*>(small.get()), 2.5f);
  be->download(host, small.get(), sizeof(host));
  EXPECT_EQ(host[15], 2.5f);
}

TEST(GpuBackendWaits, CublasWorkspaceComesFromTheAllocatorAndCapturesAllocateNothing) {
  MR_REQUIRE_GPUS(1);
  CudaBackend be(0, 0);
  EXPECT_GE(be.memory_use().in_use, static_cast<int64_t>(kBlasWorkspaceBytes))
      << "cuBLAS' workspace is not the backend's (from its allocator)";
  // A product with a long inner dimension (split-K: cuBLAS wants workspace).
  const int64_t m = 64, n = 64, k = int64_t{1} << 18;
  auto a = be.allocate(m * k * sizeof(float)), b = be.allocate(k * n * sizeof(float));
  auto c1 = be.allocate(m * n * sizeof(float)), c2 = be.allocate(m * n * sizeof(float));
  const std::vector<float> ha = uniform_floats(static_cast<size_t>(m * k), 5),
                           hb = uniform_floats(static_cast<size_t>(k * n), 6);
  be.upload(a.get(), ha.data(), ha.size() * sizeof(float));
  be.upload(b.get(), hb.data(), hb.size() * sizeof(float));
  auto product = [&](DeviceBuffer& c) {
    be.gemm(false, false, m, n, k, 1.0f, static_cast<const float*>(a.get()), k,
            static_cast<const float*>(b.get()), n, 0.0f, static_cast<float*>(c.get()), n);
  };
  product(c1);
  be.synchronize();
  const int64_t allocs = be.system_allocations();
  const size_t in_use = static_cast<size_t>(be.memory_use().in_use);
  ASSERT_TRUE(be.graph_capture_begin());
  product(c2);
  ASSERT_TRUE(be.graph_capture_end(0)) << "capturing a GEMM failed";
  ASSERT_TRUE(be.graph_launch(0));
  ASSERT_TRUE(be.graph_launch(0));
  be.synchronize();
  EXPECT_EQ(be.system_allocations(), allocs) << "capturing or replaying a GEMM allocated";
  EXPECT_EQ(static_cast<size_t>(be.memory_use().in_use), in_use);
  std::vector<float> h1(static_cast<size_t>(m * n)), h2(h1.size());
  be.download(h1.data(), c1.get(), h1.size() * sizeof(float));
  be.download(h2.data(), c2.get(), h2.size() * sizeof(float));
  EXPECT_EQ(h2, h1) << "the replayed GEMM differs from the eager one";
}

// Pooling and convolution on gpu:1 while the thread's current device is 0.
TEST(GpuBackendWaits, EveryEntryPointMakesItsDeviceCurrent) {
  MR_REQUIRE_GPUS(2);
  auto cpu = make_cpu_backend(0, 1);
  CudaBackend be(1, 1);
  ConvGeometry g;
  g.in_h = g.in_w = 6;
  g.in_c = 2;
  g.out_h = g.out_w = 4;
  g.out_c = 3;
  g.k_h = g.k_w = 3;
  ConvGeometry pool = g;
  pool.out_c = g.in_c;
  pool.out_h = pool.out_w = 3;
  pool.k_h = pool.k_w = 2;
  pool.stride_h = pool.stride_w = 2;
  const int64_t rows = 2, nx = rows * 6 * 6 * 2, nw = 3 * 3 * 2 * 3, ny = rows * 4 * 4 * 3,
                np = rows * 3 * 3 * 2;
  const std::vector<float> x = uniform_floats(static_cast<size_t>(nx), 7),
                           w = uniform_floats(static_cast<size_t>(nw), 8);
  auto dx = be.allocate(nx * 4), dw = be.allocate(nw * 4), dy = be.allocate(ny * 4),
       col = be.allocate(rows * 4 * 4 * 18 * 4), dp = be.allocate(np * 4),
       dgx = be.allocate(nx * 4);
  be.upload(dx.get(), x.data(), nx * 4);
  be.upload(dw.get(), w.data(), nw * 4);
  be.synchronize();
  auto other_device = [] { ASSERT_EQ(cudaSetDevice(0), cudaSuccess); };
  std::vector<float> want_y(static_cast<size_t>(ny)), want_p(static_cast<size_t>(np)),
      want_gx(static_cast<size_t>(nx)), col_h(static_cast<size_t>(rows * 4 * 4 * 18));
  cpu->conv_forward(g, rows, x.data(), w.data(), want_y.data(), col_h.data());
  cpu->max_pool_forward(pool, rows, x.data(), want_p.data());
  cpu->avg_pool_backward(pool, rows, want_p.data(), want_gx.data());
  for (bool prepared : {false, true}) {  // im2col, then cuDNN's path when it has one
    const std::string path = prepared ? "after prepare_conv" : "im2col";
    if (prepared) {
      other_device();
      be.prepare_conv(g, rows);
    }
    try {
      other_device();
      be.conv_forward(g, rows, static_cast<float*>(dx.get()), static_cast<float*>(dw.get()),
                      static_cast<float*>(dy.get()), static_cast<float*>(col.get()));
      other_device();
      be.max_pool_forward(pool, rows, static_cast<float*>(dx.get()), static_cast<float*>(dp.get()));
      other_device();
      be.avg_pool_backward(pool, rows, static_cast<float*>(dp.get()),
                           static_cast<float*>(dgx.get()));
      other_device();
      be.synchronize();
    } catch (const Error& e) {
      FAIL() << "an op of gpu:1 launched while device 0 was current failed (" << path
             << "): " << e.what();
    }
    std::vector<float> y(want_y.size()), p(want_p.size()), gx(want_gx.size());
    be.download(y.data(), dy.get(), ny * 4);
    be.download(p.data(), dp.get(), np * 4);
    be.download(gx.data(), dgx.get(), nx * 4);
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_NEAR(y[i], want_y[i], 1e-5f) << path << " conv " << i;
    EXPECT_EQ(p, want_p) << path << " max pool";
    for (size_t i = 0; i < gx.size(); ++i)
      ASSERT_NEAR(gx[i], want_gx[i], 1e-6f) << path << " avg pool backward " << i;
  }
}

#endif

}  // namespace
}  // namespace mr
