// The owning handles of a CUDA backend (backends/cuda/cuda_handles.h): what a
// constructor made before it threw is freed by the members' destructors, a
// released handle is not freed, a moved one is freed once. Runs without a GPU
// in CUDA builds (a fake handle type and a counting deleter), skipped in
// CPU-only builds, which have no CUDA headers.
#include <gtest/gtest.h>

#include <stdexcept>
#include <utility>

#include "build_config.h"

#if MR_WITH_CUDA
#include "backends/cuda/cuda_handles.h"
#endif

namespace mr {
namespace {

#if MR_WITH_CUDA

struct FakeHandle {};
int freed = 0;
struct CountFree {
  void operator()(FakeHandle*) const noexcept { ++freed; }
};
using Handle = cuda::Owned<FakeHandle*, CountFree>;

// Makes two handles, then throws, as a backend's constructor may.
struct HalfBuilt {
  Handle a, b, c;
  explicit HalfBuilt(FakeHandle* h) {
    *a.out() = h;
    *b.out() = h;
    throw std::runtime_error("the third handle could not be made");
  }
};

TEST(CudaHandles, AConstructorThatThrowsFreesWhatItMade) {
  FakeHandle h;
  freed = 0;
  EXPECT_THROW(HalfBuilt{&h}, std::runtime_error);
  EXPECT_EQ(freed, 2) << "handles made before the throw were leaked (or the empty one freed)";
}

TEST(CudaHandles, ReleaseLeaksMoveTransfersResetFrees) {
  FakeHandle h;
  freed = 0;
  {
    Handle a(&h);
    FakeHandle* raw = a;  // converts to the raw handle
    EXPECT_EQ(raw, &h);
    Handle b(std::move(a));
    EXPECT_EQ(a.get(), nullptr);
    EXPECT_EQ(b.get(), &h);
    Handle c;
    c = std::move(b);
    EXPECT_EQ(freed, 0);
  }
  EXPECT_EQ(freed, 1) << "a moved handle must be freed exactly once";
  {
    Handle a(&h);
    EXPECT_EQ(a.release(), &h);
  }
  EXPECT_EQ(freed, 1) << "a released handle was freed";
  Handle a(&h);
  *a.out() = &h;  // out() frees the previous handle first
  EXPECT_EQ(freed, 2);
  a.reset();
  a.reset();
  EXPECT_EQ(freed, 3);
}

#else

TEST(CudaHandles, NeedACudaBuild) { GTEST_SKIP() << "built without CUDA"; }

#endif

}  // namespace
}  // namespace mr
