// CUDA error reporting, checkable without a GPU: a sticky error (the context
// is unusable) tells the user to restart the R session; others do not.
#include <gtest/gtest.h>

#include <string>

#include "build_config.h"

#if MR_WITH_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_event.h"
#endif

namespace mr {
namespace {

#if MR_WITH_CUDA
std::string message_of(cudaError_t st) {
  try {
    cuda_check(st, "cudaMemcpyAsync", 3);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::device);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(CudaErrors, StickyErrorsSayTheSessionMustBeRestarted) {
  for (cudaError_t st : {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorAssert}) {
    EXPECT_TRUE(cuda_error_is_sticky(st));
    const std::string m = message_of(st);
    EXPECT_NE(m.find("restart the R session"), std::string::npos) << m;
    EXPECT_NE(m.find("CUDA device 3"), std::string::npos) << m;
  }
  for (cudaError_t st : {cudaErrorMemoryAllocation, cudaErrorInvalidValue}) {
    EXPECT_FALSE(cuda_error_is_sticky(st));
    EXPECT_EQ(message_of(st).find("restart"), std::string::npos);
  }
  EXPECT_NO_THROW(cuda_check(cudaSuccess, "x", 0));
}
#else
TEST(CudaErrors, StickyErrorsSayTheSessionMustBeRestarted) { GTEST_SKIP() << "CPU-only build"; }
#endif

}  // namespace
}  // namespace mr
