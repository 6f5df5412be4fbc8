// Backend::gather_rows (i14-devinput) against a plain loop: repeated and
// out-of-order indices, widths of 1 and of several floats, no rows; on the
// CPU and on a GPU (skipped without one).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "core/rng.h"
#include "tests/test_util.h"

namespace mr {
namespace {

void check_gather(Backend& be) {
  const RandomStream rs(3, 0, 1);
  for (int64_t width : {1, 7, 784}) {
    const int64_t src_rows = 53, rows = 40;
    std::vector<float> src(static_cast<size_t>(src_rows * width));
    for (size_t i = 0; i < src.size(); ++i) src[i] = rs.uniform(i) - 0.5f;
    std::vector<int32_t> index(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r)  // out of order, some repeated, the last row included
      index[static_cast<size_t>(r)] = static_cast<int32_t>((r * 37 + 11) % src_rows);
    index[5] = index[6];
    index[7] = static_cast<int32_t>(src_rows - 1);
    std::vector<float> want(static_cast<size_t>(rows * width));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < width; ++c)
        want[static_cast<size_t>(r * width + c)] =
            src[static_cast<size_t>(index[static_cast<size_t>(r)] * width + c)];

    auto d_src = be.allocate(src.size() * sizeof(float));
    auto d_idx = be.allocate(index.size() * sizeof(int32_t));
    auto d_dst = be.allocate(want.size() * sizeof(float));
    be.upload(d_src.get(), src.data(), src.size() * sizeof(float));
    be.upload(d_idx.get(), index.data(), index.size() * sizeof(int32_t));
    be.fill(rows * width, static_cast<float*>(d_dst.get()), 99.0f);
    be.gather_rows(rows, width, static_cast<const float*>(d_src.get()),
                   static_cast<const int32_t*>(d_idx.get()), static_cast<float*>(d_dst.get()));
    std::vector<float> got(want.size());
    be.download(got.data(), d_dst.get(), got.size() * sizeof(float));
    EXPECT_EQ(got, want) << "width " << width;
    // No rows: nothing written.
    be.gather_rows(0, width, static_cast<const float*>(d_src.get()),
                   static_cast<const int32_t*>(d_idx.get()), static_cast<float*>(d_dst.get()));
    be.download(got.data(), d_dst.get(), got.size() * sizeof(float));
    EXPECT_EQ(got, want);
  }
}

TEST(GatherRows, CpuMatchesAPlainLoop) {
  auto be = make_cpu_backend(0, 2);
  check_gather(*be);
}

TEST(GpuGatherRows, MatchesAPlainLoop) {
  MR_REQUIRE_GPUS(1);
  auto be = make_cuda_backend(0, 0);
  check_gather(*be);
}

}  // namespace
}  // namespace mr
