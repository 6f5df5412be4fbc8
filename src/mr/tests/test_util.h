// Helpers shared by the GoogleTest files.
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/device_info.h"
#include "core/error.h"
#include "core/rng.h"

namespace mr {

// The threads of this process now (-1 without /proc): tests check that
// threads started by a pass or a model are joined.
inline int thread_count() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

// n floats uniform in [lo, hi) from Philox keyed by (seed, stream): the same
// values on every platform and run.
inline std::vector<float> uniform_floats(size_t n, uint64_t seed, uint32_t stream = 0,
                                         float lo = -1.0f, float hi = 1.0f) {
  const RandomStream rs(seed, 0, stream);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * rs.uniform(i);
  return v;
}

// The RMS of got - want relative to the RMS of want (weights compared across
// devices and replica counts).
inline double rms_rel(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (double{got[i]} - want[i]) * (double{got[i]} - want[i]);
    den += double{want[i]} * want[i];
  }
  return std::sqrt(num / den);
}

// Runs `f`, expects it to throw mr::Error of kind io, and returns its message
// (empty, with a test failure, when nothing was thrown).
template <typename F>
std::string io_error(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

// MIRRORED_TEST_CUDA=1 (the GPU machine's run) turns "no GPU, skipped" into a
// failure, so that a broken driver or build cannot pass as skipped tests.
inline bool gpu_required() {
  const char* v = std::getenv("MIRRORED_TEST_CUDA");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace mr

// Skips the test without a CUDA device (fails instead under MIRRORED_TEST_CUDA=1).
#define MR_REQUIRE_GPUS(n)                                                               \
  do {                                                                                   \
    const int have_ = ::mr::cuda_device_count();                                         \
    if (have_ < (n)) {                                                                   \
      if (::mr::gpu_required() && (n) == 1)                                              \
        FAIL() << "MIRRORED_TEST_CUDA=1 but no CUDA device is usable (built with CUDA: " \
               << ::mr::built_with_cuda() << ")";                                        \
      GTEST_SKIP() << "needs " << (n) << " CUDA device(s), " << have_ << " visible";     \
    }                                                                                    \
  } while (0)
