// dtypes in the op set and events / lanes on the CPU backend (and on a GPU
// where there is one): ops reject a dtype they do not implement with a value
// error naming it; CPU events are complete as soon as they are recorded.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "core/dtype.h"
#include "tests/test_util.h"

namespace mr {
namespace {

TEST(DType, SizesAndKerasNames) {
  EXPECT_EQ(dtype_size(DType::f32), 4u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::f16), 2u);
  EXPECT_EQ(dtype_size(DType::int32), 4u);
  EXPECT_EQ(dtype_size(DType::boolean), 1u);
  EXPECT_STREQ(dtype_name(DType::f32), "float32");
  EXPECT_STREQ(dtype_name(DType::bf16), "bfloat16");
  EXPECT_STREQ(dtype_name(DType::f16), "float16");
  EXPECT_STREQ(dtype_name(DType::int32), "int32");
  EXPECT_STREQ(dtype_name(DType::boolean), "bool");
}

std::string value_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::value) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

// The typed entry points on any backend: f32 computes, others are rejected.
void typed_ops_case(Backend& be) {
  auto a = be.allocate(4 * sizeof(float)), b = be.allocate(4 * sizeof(float));
  auto c = be.allocate(4 * sizeof(float));
  const std::vector<float> av{1, 2, 3, 4}, bv{1, 0, 0, 1};
  be.upload(a.get(), av.data(), 16);
  be.upload(b.get(), bv.data(), 16);
  be.gemm_typed(false, false, 2, 2, 2, 1.0f, {a.get(), DType::f32}, 2, {b.get(), DType::f32}, 2,
                0.0f, {c.get(), DType::f32}, 2);
  std::vector<float> got(4);
  be.download(got.data(), c.get(), 16);
  EXPECT_EQ(got, av);
  be.axpy_typed(4, 1.0f, {a.get(), DType::f32}, {c.get(), DType::f32});
  be.download(got.data(), c.get(), 16);
  EXPECT_EQ(got, (std::vector<float>{2, 4, 6, 8}));
  for (DType t : {DType::bf16, DType::f16, DType::int32, DType::boolean}) {
    const std::string m = value_error([&] {
      be.gemm_typed(false, false, 2, 2, 2, 1.0f, {a.get(), t}, 2, {b.get(), DType::f32}, 2, 0.0f,
                    {c.get(), DType::f32}, 2);
    });
    EXPECT_NE(m.find(dtype_name(t)), std::string::npos) << m;
    EXPECT_NE(m.find(be.name()), std::string::npos) << m;
    EXPECT_FALSE(value_error([&] {
                   be.axpy_typed(4, 1.0f, {a.get(), DType::f32}, {c.get(), t});
                 }).empty());
  }
  // Nothing was written by a rejected op.
  be.download(got.data(), c.get(), 16);
  EXPECT_EQ(got, (std::vector<float>{2, 4, 6, 8}));
}

void events_case(Backend& be) {
  auto e = be.create_event();
  EXPECT_TRUE(be.event_done(*e));  // never recorded: complete
  auto src = be.allocate(1024 * sizeof(float)), dst = be.allocate(1024 * sizeof(float));
  be.fill(1024, static_cast<float*>(src.get()), 3.0f);
  // compute -> copy lane -> compute, ordered only by events.
  be.record_event(*e, Lane::compute);
  be.wait_event(*e, Lane::copy);
  be.copy_on(Lane::copy, dst.get(), src.get(), 1024 * sizeof(float));
  auto copied = be.create_event();
  be.record_event(*copied, Lane::copy);
  be.wait_event(*copied, Lane::compute);
  be.wait_host(*copied, "the test copy");
  EXPECT_TRUE(be.event_done(*copied));
  std::vector<float> got(1024);
  be.download(got.data(), dst.get(), got.size() * sizeof(float));
  EXPECT_EQ(got, std::vector<float>(1024, 3.0f));
}

TEST(CpuTypedOps, RejectUnimplementedDtypes) {
  CpuBackend be(0, 1);
  typed_ops_case(be);
}

TEST(CpuEvents, CompleteOnceRecorded) {
  CpuBackend be(0, 1);
  events_case(be);
}

TEST(GpuTypedOps, RejectUnimplementedDtypes) {
  MR_REQUIRE_GPUS(1);
  auto be = make_cuda_backend(0, 0);
  typed_ops_case(*be);
}

TEST(GpuEvents, OrderTheCopyLaneAfterCompute) {
  MR_REQUIRE_GPUS(1);
  auto be = make_cuda_backend(0, 0);
  events_case(*be);
}

// A host wait on a busy GPU gives up at the deadline (Error timeout naming
// the device) or at once when the abort flag is set, and succeeds later.
TEST(GpuEvents, HostWaitsHonourTheDeadlineAndTheAbortFlag) {
  MR_REQUIRE_GPUS(1);
  auto be = make_cuda_backend(0, 0);
  const int64_t n = 8192;
  auto a = be->allocate(n * n * sizeof(float)), c = be->allocate(n * n * sizeof(float));
  const auto* ap = static_cast<const float*>(a.get());
  auto busy = [&] {  // ~10 TFLOP: well over a millisecond on any GPU
    for (int i = 0; i < 10; ++i)
      be->gemm(false, false, n, n, n, 1.0f, ap, n, ap, n, 0.0f, static_cast<float*>(c.get()), n);
  };
  busy();
  be->set_wait_limits(WaitLimits{1e-4, nullptr, nullptr});
  try {
    be->synchronize();
    ADD_FAILURE() << "no timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::timeout) << e.what();
    EXPECT_NE(std::string(e.what()).find("gpu:0"), std::string::npos) << e.what();
  }
  std::atomic<bool> abort{true};
  busy();
  be->set_wait_limits(WaitLimits{600.0, &abort, nullptr});
  EXPECT_THROW(be->synchronize(), CollectiveAborted);
  abort = false;
  be->synchronize();
}

}  // namespace
}  // namespace mr
