// cuDNN is optional and lazy (backends/cuda/optional_engine.h): an engine is
// made on its first use only, a failure to make it is not fatal (the caller
// falls back, and a one-line note says why), and it is never retried. The
// policy is tested on the CPU with a fake engine; the GPU tests (skipped
// without a device, failures under MIRRORED_TEST_CUDA=1) check that a CUDA
// backend makes no cuDNN handle until a convolution is prepared, and what the
// strategy's print() says about the convolutions.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <new>
#include <string>

#include "backends/cuda/optional_engine.h"
#include "build_config.h"
#include "core/conv_geometry.h"
#include "core/device_info.h"
#include "core/error.h"
#include "tests/test_util.h"

#if MR_WITH_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_conv_engine.h"
#endif

namespace mr {
namespace {

struct FakeEngine {
  int id = 7;
};

TEST(OptionalEngine, AFailureIsNotFatalIsNotedInOneLineAndIsNotRetried) {
  OptionalEngine<FakeEngine> e("cuDNN", "convolutions run im2col + cuBLAS");
  EXPECT_FALSE(e.tried());
  EXPECT_EQ(e.made(), nullptr);
  int calls = 0;
  auto failing = [&]() -> std::unique_ptr<FakeEngine> {
    ++calls;
    fail(ErrorKind::device,
         "cudnnCreate(&handle_) failed on CUDA device 0: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED\n"
         "libcudnn_graph.so.9: cannot open shared object file");
  };
  EXPECT_EQ(e.get(failing), nullptr) << "a failed engine must read as absent, not throw";
  EXPECT_EQ(e.get(failing), nullptr);
  EXPECT_EQ(calls, 1) << "a failed engine was made again";
  EXPECT_TRUE(e.tried());
  const std::string& note = e.note();
  EXPECT_EQ(note.find('\n'), std::string::npos) << "the note is not one line: " << note;
  EXPECT_EQ(note.rfind("cuDNN unavailable (", 0), 0u) << note;
  EXPECT_NE(note.find("CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"), std::string::npos)
      << "the note does not say why: " << note;
  EXPECT_NE(note.find("convolutions run im2col + cuBLAS"), std::string::npos)
      << "the note does not say what runs instead: " << note;
}

TEST(OptionalEngine, IsMadeOnceOnFirstUse) {
  OptionalEngine<FakeEngine> e("cuDNN", "fallback");
  int calls = 0;
  auto make = [&] {
    ++calls;
    return std::make_unique<FakeEngine>();
  };
  FakeEngine* first = e.get(make);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->id, 7);
  EXPECT_EQ(e.get(make), first);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(e.made(), first);
  EXPECT_TRUE(e.note().empty()) << e.note();
  e.reset();
  EXPECT_EQ(e.made(), nullptr);
}

TEST(OptionalEngine, OtherExceptionsAreNotSwallowed) {
  OptionalEngine<FakeEngine> e("cuDNN", "fallback");
  auto bad = []() -> std::unique_ptr<FakeEngine> { throw std::bad_alloc(); };
  EXPECT_THROW(e.get(bad), std::bad_alloc);
}

#if MR_WITH_CUDA

ConvGeometry conv3x3() {
  ConvGeometry g;
  g.in_h = g.in_w = 12;
  g.in_c = 3;
  g.out_h = g.out_w = 10;
  g.out_c = 8;
  g.k_h = g.k_w = 3;
  return g;
}

TEST(OptionalEngineGpu, ACudaBackendMakesCudnnOnlyForAConvolution) {
  MR_REQUIRE_GPUS(1);
  CudaBackend be(0, 0);
  const ConvGeometry g = conv3x3();
  // An MLP never prepares a convolution: no cuDNN handle, nothing noted.
  EXPECT_EQ(be.conv_path(g, 4), "im2col") << "cuDNN was made before any convolution";
  EXPECT_TRUE(be.cudnn_note().empty()) << be.cudnn_note();
  be.prepare_conv(g, 4);
  const std::string path = be.conv_path(g, 4);
  if (!built_with_cudnn()) {
    EXPECT_EQ(path, "im2col");
    EXPECT_TRUE(be.cudnn_note().empty()) << be.cudnn_note();
  } else if (be.cudnn_note().empty()) {
    EXPECT_EQ(path, "cudnn") << "cuDNN was made but does not run the convolution";
  } else {
    // cuDNN could not be made on this machine: the backend lives on, and
    // the log says why.
    EXPECT_EQ(path, "im2col") << be.cudnn_note();
    std::printf("[ note     ] %s\n", be.cudnn_note().c_str());
  }
  // Whatever the path, the convolution runs.
  auto x = be.allocate(4 * 12 * 12 * 3 * sizeof(float));
  auto w = be.allocate(3 * 3 * 3 * 8 * sizeof(float));
  auto y = be.allocate(4 * 10 * 10 * 8 * sizeof(float));
  auto col = be.allocate(4 * 10 * 10 * 27 * sizeof(float));
  be.fill(4 * 12 * 12 * 3, static_cast<float*>(x.get()), 1.0f);
  be.fill(3 * 3 * 3 * 8, static_cast<float*>(w.get()), 0.5f);
  be.conv_forward(g, 4, static_cast<float*>(x.get()), static_cast<float*>(w.get()),
                  static_cast<float*>(y.get()), static_cast<float*>(col.get()));
  float out = 0.0f;
  be.download(&out, y.get(), sizeof(out));
  EXPECT_EQ(out, 13.5f) << "3x3x3 ones times 0.5, through " << path;
}

TEST(OptionalEngineGpu, TheStrategyLineSaysWhatRunsTheConvolutions) {
  MR_REQUIRE_GPUS(1);
  const std::string line = cuda_conv_engine(0);
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  if (!built_with_cudnn()) {
    EXPECT_EQ(line, "convolutions: im2col + cuBLAS (built without cuDNN)");
  } else if (line.rfind("convolutions: cuDNN ", 0) == 0) {
    EXPECT_NE(line.find(cudnn_version()), std::string::npos) << line;
  } else {
    EXPECT_EQ(line.rfind("cuDNN unavailable (", 0), 0u) << line;
  }
  std::printf("[ note     ] %s\n", line.c_str());
}

#endif

}  // namespace
}  // namespace mr
