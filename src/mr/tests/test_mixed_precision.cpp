// Mixed precision's ops and the Dense layer under mixed_bfloat16 (issue 14,
// i14-mpcore): casts round to nearest even (against hand-worked values and the
// CPU's F16C conversion), gemm_lowp equals a double-precision product of the
// rounded inputs for every transpose, a mixed Dense layer's forward and
// gradients equal a double reference with bf16-rounded operands (and differ
// from the f32 ones), a mixed MLP trains like the f32 one within bf16's
// precision, and the GPU's ops match the CPU's (skipped without a GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "core/rng.h"
#include "tests/graphs.h"
#include "tests/test_util.h"
#include "train/model.h"

namespace mr {
namespace {

std::vector<float> rand_vec(size_t n, uint32_t stream, float lo = -1.0f, float hi = 1.0f) {
  const RandomStream rs(4242, 0, stream);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * rs.uniform(i);
  return v;
}

float bf16_value(uint16_t h) {
  const uint32_t b = static_cast<uint32_t>(h) << 16;
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// binary16 -> double, from the definition.
double f16_value(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0x1f) return m ? std::numeric_limits<double>::quiet_NaN() : s * HUGE_VAL;
  if (e == 0) return s * std::ldexp(m, -24);
  return s * std::ldexp(1024 + m, e - 25);
}

std::vector<uint16_t> cast(Backend& be, DType t, const std::vector<float>& x) {
  std::vector<uint16_t> out(x.size());
  be.cast_lowp(t, static_cast<int64_t>(x.size()), x.data(), out.data());
  return out;
}

double widen(DType t, uint16_t h) { return t == DType::bf16 ? bf16_value(h) : f16_value(h); }

TEST(MixedPrecisionOps, CastsRoundToNearestEven) {
  auto be = make_cpu_backend(0, 2);
  const float one = 1.0f;
  const std::vector<float> x{
      one,  1.0f + 0.00390625f /* tie: to even 1 */, 1.0f + 3 * 0.00390625f /* tie: up */, -2.5f,
      0.0f, std::numeric_limits<float>::infinity()};
  const auto b = cast(*be, DType::bf16, x);
  EXPECT_EQ(b[0], 0x3f80);
  EXPECT_EQ(b[1], 0x3f80);
  EXPECT_EQ(b[2], 0x3f82);
  EXPECT_EQ(b[3], 0xc020);
  EXPECT_EQ(b[4], 0x0000);
  EXPECT_EQ(b[5], 0x7f80);
  const std::vector<float> y{1.0f,
                             65504.0f,
                             65520.0f /* to Inf */,
                             std::ldexp(1.0f, -24),
                             std::ldexp(1.0f, -25) /* tie: to 0 */,
                             3 * std::ldexp(1.0f, -25),
                             -1.0f - std::ldexp(1.0f, -11) /* tie: to even -1 */};
  const auto h = cast(*be, DType::f16, y);
  EXPECT_EQ(h[0], 0x3c00);
  EXPECT_EQ(h[1], 0x7bff);
  EXPECT_EQ(h[2], 0x7c00);
  EXPECT_EQ(h[3], 0x0001);
  EXPECT_EQ(h[4], 0x0000);
  EXPECT_EQ(h[5], 0x0002);
  EXPECT_EQ(h[6], 0xbc00);
  const auto nan = cast(*be, DType::f16, {std::numeric_limits<float>::quiet_NaN()});
  EXPECT_TRUE(std::isnan(f16_value(nan[0])));
  EXPECT_TRUE(std::isnan(bf16_value(cast(*be, DType::bf16, {std::nanf("")})[0])));
  // Every cast is the nearest 16-bit value (ties aside): over a wide range.
  std::vector<float> r = rand_vec(20000, 1, -1.0f, 1.0f);
  for (size_t i = 0; i < r.size(); ++i) r[i] = std::ldexp(r[i], static_cast<int>(i % 40) - 26);
  for (DType t : {DType::bf16, DType::f16}) {
    const auto c = cast(*be, t, r);
    for (size_t i = 0; i < r.size(); ++i) {
      const double v = widen(t, c[i]);
      // The neighbours one unit away are no nearer.
      const double up = widen(t, static_cast<uint16_t>(c[i] + 1));
      const double down = widen(t, static_cast<uint16_t>(c[i] - 1));
      ASSERT_LE(std::fabs(v - r[i]), std::fabs(up - r[i])) << r[i];
      if ((c[i] & 0x7fff) != 0) ASSERT_LE(std::fabs(v - r[i]), std::fabs(down - r[i])) << r[i];
    }
  }
}

// gemm_lowp against double products of the rounded operands.
void check_gemm(Backend& be, DType t) {
  struct Shape3 {
    int64_t m, n, k;
  };
  for (const Shape3& s : {Shape3{1, 1, 1}, Shape3{7, 5, 3}, Shape3{33, 17, 65}, Shape3{64, 48, 96}})
    for (int tr = 0; tr < 4; ++tr)
      for (float beta : {0.0f, 1.0f}) {
        const bool ta = tr & 1, tb = tr & 2;
        const auto a = rand_vec(static_cast<size_t>(s.m * s.k), 2 + tr);
        const auto b = rand_vec(static_cast<size_t>(s.k * s.n), 3 + tr);
        const auto a16 = cast(be, t, a), b16 = cast(be, t, b);
        std::vector<float> c = rand_vec(static_cast<size_t>(s.m * s.n), 4), c0 = c;
        const int64_t lda = ta ? s.m : s.k, ldb = tb ? s.k : s.n;
        be.gemm_lowp(t, ta, tb, s.m, s.n, s.k, 0.5f, a16.data(), lda, b16.data(), ldb, beta,
                     c.data(), s.n);
        for (int64_t i = 0; i < s.m; ++i)
          for (int64_t j = 0; j < s.n; ++j) {
            double acc = 0.0, mag = 0.0;
            for (int64_t p = 0; p < s.k; ++p) {
              const double x = widen(t, ta ? a16[p * lda + i] : a16[i * lda + p]);
              const double y = widen(t, tb ? b16[j * ldb + p] : b16[p * ldb + j]);
              acc += x * y;
              mag += std::fabs(x * y);
            }
            const double want = 0.5 * acc + beta * c0[i * s.n + j];
            ASSERT_NEAR(c[i * s.n + j], want, 4e-7 * (mag + 1.0) * std::sqrt(s.k + 1.0))
                << dtype_name(t) << " m" << s.m << " n" << s.n << " k" << s.k << " ta" << ta
                << " tb" << tb << " beta " << beta;
          }
      }
}

TEST(MixedPrecisionOps, GemmLowpIsTheProductOfTheRoundedInputs) {
  auto be = make_cpu_backend(0, 2);
  be->prepare_lowp(DType::bf16);
  check_gemm(*be, DType::bf16);  // oneDNN where the CPU has bf16 units
  check_gemm(*be, DType::f16);   // the reference loop
}

// ---- the Dense layer under mixed_bfloat16 ----

constexpr int64_t kIn = 24, kOut = 5, kRows = 16;

Initializer normal(uint64_t seed, double sd) {
  Initializer i;
  i.kind = Initializer::Kind::random_normal;
  i.b = sd;
  i.seed = seed;
  return i;
}

std::shared_ptr<const Graph> dense_graph(const char* policy) {
  std::vector<GraphNode> nodes(2);
  nodes[0].name = "input_layer";
  nodes[0].layer = make_input_layer(Shape{kIn});
  nodes[1].name = "dense";
  auto dense = make_dense(kOut, Activation::linear, true, normal(1, 0.5), normal(2, 0.3));
  dense->set_dtype_policy(parse_dtype_policy(Json(policy), "dense"));
  nodes[1].layer = std::move(dense);
  nodes[1].inputs = {0};
  return std::make_shared<const Graph>(std::move(nodes), std::vector<int>{0}, std::vector<int>{1});
}

double round_bf16(double v) {
  auto be = make_cpu_backend(0, 1);
  const float f = static_cast<float>(v);
  uint16_t h = 0;
  be->cast_lowp(DType::bf16, 1, &f, &h);
  return bf16_value(h);
}

TEST(MixedPrecisionDense, MatchesADoubleReferenceWithBf16Operands) {
  auto probe = make_cpu_backend(0, 1);
  if (!probe->native_lowp(DType::bf16)) GTEST_SKIP() << "this CPU has no bf16 units";
  Model m(dense_graph("mixed_bfloat16"), {DeviceSpec{}}, 2);
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::sgd;
  c.optimizer.learning_rate = 1.0;
  c.loss.kind = LossKind::mean_squared_error;
  c.loss.name = "mse";
  m.compile(c);
  EXPECT_TRUE(m.precision_note().empty()) << m.precision_note();
  const std::vector<float> p = m.get_params();
  const auto& prm = m.graph().params();
  const std::vector<float> x = rand_vec(kRows * kIn, 7), y = rand_vec(kRows * kOut, 8);
  HostBatch b;
  b.rows = kRows;
  b.parts = {{x.data(), kIn}, {y.data(), kOut}};
  std::vector<float> out(kRows * kOut);
  m.predict_step(b, 0, out.data());
  // z in double from bf16-rounded x and W (f32 bias), and from the f32 ones.
  std::vector<double> z(kRows * kOut), z32(kRows * kOut);
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t j = 0; j < kOut; ++j) {
      double s = p[prm[1].offset + j], s32 = s;
      for (int64_t k = 0; k < kIn; ++k) {
        const double w = p[prm[0].offset + k * kOut + j];
        s += round_bf16(x[r * kIn + k]) * round_bf16(w);
        s32 += double{x[r * kIn + k]} * w;
      }
      z[r * kOut + j] = s;
      z32[r * kOut + j] = s32;
    }
  double far_from_f32 = 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_NEAR(out[i], z[i], 1e-5) << i;
    far_from_f32 = std::max(far_from_f32, std::fabs(out[i] - z32[i]));
  }
  // bf16's 8-bit mantissa moves z by ~1e-2 here: the path really rounds.
  EXPECT_GT(far_from_f32, 1e-3);
  // Gradients: one SGD step with lr 1 gives g = w_before - w_after.
  m.train_step(b);
  const std::vector<float> q = m.get_params();
  for (int64_t k = 0; k < kIn; ++k)
    for (int64_t j = 0; j < kOut; ++j) {
      double g = 0.0;
      for (int64_t r = 0; r < kRows; ++r) {
        const double dz = round_bf16(2.0 * (out[r * kOut + j] - y[r * kOut + j]) /
                                     static_cast<double>(kOut * kRows));
        g += round_bf16(x[r * kIn + k]) * dz;
      }
      const size_t i = static_cast<size_t>(prm[0].offset + k * kOut + j);
      EXPECT_NEAR(p[i] - q[i], g, 2e-6 + 1e-3 * std::fabs(g)) << "kernel " << k << "," << j;
    }
}

// A small MLP trained 30 SGD steps in mixed_bfloat16 and in float32 from the
// same weights: the losses agree and the weights' paths differ by a few
// tenths of a percent of how far they moved (bf16's 2^-9 relative rounding;
// SGD keeps the difference linear in the gradients', unlike Adam's
// normalised steps, which turn rounding noise of tiny gradients into whole
// steps).
std::shared_ptr<const Graph> mlp(const char* policy) {
  std::vector<GraphNode> nodes(3);
  nodes[0].name = "input_layer";
  nodes[0].layer = make_input_layer(Shape{kIn});
  nodes[1].name = "dense";
  auto d1 = make_dense(32, Activation::relu, true, normal(1, 0.3), normal(2, 0.1));
  auto d2 = make_dense(kOut, Activation::linear, true, normal(3, 0.3), normal(4, 0.1));
  d1->set_dtype_policy(parse_dtype_policy(Json(policy), "d"));
  d2->set_dtype_policy(parse_dtype_policy(Json(policy), "d"));
  nodes[1].layer = std::move(d1);
  nodes[1].inputs = {0};
  nodes[2].name = "dense_1";
  nodes[2].layer = std::move(d2);
  nodes[2].inputs = {1};
  return std::make_shared<const Graph>(std::move(nodes), std::vector<int>{0}, std::vector<int>{2});
}

TEST(MixedPrecisionDense, Bf16MlpTracksFloat32) {
  auto probe = make_cpu_backend(0, 1);
  if (!probe->native_lowp(DType::bf16)) GTEST_SKIP() << "this CPU has no bf16 units";
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::sgd;
  c.optimizer.learning_rate = 0.1;
  c.loss.kind = LossKind::mean_squared_error;
  c.loss.name = "mse";
  Model f32(mlp("float32"), {DeviceSpec{}, DeviceSpec{DeviceKind::cpu, 1}}, 1);
  Model bf(mlp("mixed_bfloat16"), {DeviceSpec{}, DeviceSpec{DeviceKind::cpu, 1}}, 1);
  f32.compile(c);
  bf.compile(c);
  const std::vector<float> w_init = f32.get_params();
  bf.set_params(w_init);
  const std::vector<float> x = rand_vec(64 * kIn, 11), y = rand_vec(64 * kOut, 12);
  HostBatch b;
  b.rows = 64;
  b.parts = {{x.data(), kIn}, {y.data(), kOut}};
  for (int s = 0; s < 30; ++s) {
    f32.train_step(b);
    bf.train_step(b);
  }
  const auto w32 = f32.get_params(), w16 = bf.get_params();
  double moved = 0.0, max_d = 0.0;
  for (size_t i = 0; i < w32.size(); ++i) {
    moved = std::max(moved, std::fabs(double{w32[i]} - w_init[i]));
    max_d = std::max(max_d, std::fabs(double{w32[i]} - w16[i]));
  }
  EXPECT_GT(moved, 0.05);
  EXPECT_LT(max_d, 0.02 * moved);
  EXPECT_GT(max_d, 0.0);  // not the f32 path
  const auto l32 = f32.read_metrics(), l16 = bf.read_metrics();
  EXPECT_NEAR(l16[0], l32[0], 0.02 * l32[0]);
  // The replicas agree bit for bit.
  EXPECT_EQ(bf.get_params(0), bf.get_params(1));
}

TEST(MixedPrecisionDense, Float16OnThisCpuComputesInFloat32WithANote) {
  Model m(dense_graph("mixed_float16"), {DeviceSpec{}}, 1);
  CompileConfig c;
  c.loss.kind = LossKind::mean_squared_error;
  c.loss.name = "mse";
  m.compile(c);
  auto probe = make_cpu_backend(0, 1);
  if (probe->native_lowp(DType::f16)) {
    EXPECT_TRUE(m.precision_note().empty());
  } else {
    EXPECT_NE(m.precision_note().find("mixed_float16"), std::string::npos) << m.precision_note();
    EXPECT_NE(m.precision_note().find("float32"), std::string::npos);
  }
}

// ---- the GPU against the CPU ----

TEST(MixedPrecisionGpu, CastAndGemmLowpMatchTheCpu) {
  MR_REQUIRE_GPUS(1);
  auto cpu = make_cpu_backend(0, 2);
  auto gpu = make_cuda_backend(0, 0);
  for (DType t : {DType::bf16, DType::f16}) {
    if (!gpu->native_lowp(t)) continue;
    const int64_t m = 37, n = 29, k = 70;
    const auto a = rand_vec(m * k, 21), b = rand_vec(k * n, 22);
    auto da = gpu->allocate(a.size() * 4), db = gpu->allocate(b.size() * 4);
    auto ha = gpu->allocate(a.size() * 2), hb = gpu->allocate(b.size() * 2);
    auto dc = gpu->allocate(static_cast<size_t>(m * n) * 4);
    gpu->upload(da.get(), a.data(), a.size() * 4);
    gpu->upload(db.get(), b.data(), b.size() * 4);
    gpu->cast_lowp(t, m * k, static_cast<const float*>(da.get()), ha.get());
    gpu->cast_lowp(t, k * n, static_cast<const float*>(db.get()), hb.get());
    std::vector<uint16_t> ga(a.size()), gb(b.size());
    gpu->download(ga.data(), ha.get(), ga.size() * 2);
    gpu->download(gb.data(), hb.get(), gb.size() * 2);
    EXPECT_EQ(ga, cast(*cpu, t, a)) << dtype_name(t);
    EXPECT_EQ(gb, cast(*cpu, t, b)) << dtype_name(t);
    for (int tr = 0; tr < 4; ++tr) {
      const bool ta = tr & 1, tb = tr & 2;
      // The same bits read as op(A) (m x k) and op(B) (k x n).
      const int64_t lda = ta ? m : k, ldb = tb ? k : n;
      gpu->gemm_lowp(t, ta, tb, m, n, k, 1.0f, ha.get(), lda, hb.get(), ldb, 0.0f,
                     static_cast<float*>(dc.get()), n);
      std::vector<float> g(static_cast<size_t>(m * n)), want(g.size());
      gpu->download(g.data(), dc.get(), g.size() * 4);
      cpu->gemm_lowp(t, ta, tb, m, n, k, 1.0f, ga.data(), lda, gb.data(), ldb, 0.0f, want.data(),
                     n);
      for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], want[i], 1e-4) << i;
    }
  }
}

}  // namespace
}  // namespace mr
