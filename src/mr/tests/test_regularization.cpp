// Regularizers and constraints (nn/regularization.h): the ops against
// double-precision references, the orthogonal regularizer's value against
// Keras' formula and its gradient against finite differences of that
// formula, the configs Keras writes, and on a GPU the CUDA ops against the
// CPU's.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "nn/regularization.h"
#include "tests/graphs.h"
#include "tests/test_util.h"

namespace mr {
namespace {

std::vector<float> wave(int64_t n, double a, double b, double scale = 1.0, double shift = 0.0) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] =
        static_cast<float>(std::sin(a * static_cast<double>(i) + b) * scale + shift);
  return v;
}

double dsign(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }

TEST(RegularizationOps, L1L2PenaltyMatchesReference) {
  CpuBackend be(0, 2);
  std::vector<float> x = wave(37, 0.7, 0.3, 2.0);
  x[5] = 0.0f;  // sign(0) = 0
  const float l1 = 0.03f, l2 = 0.02f;
  std::vector<float> g = wave(37, 0.2, 1.0), g0 = g;
  double acc = 1.5;
  be.l1_l2_penalty(37, x.data(), l1, l2, 3.0, &acc, 0.5f, g.data());
  double ref = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double xi = x[i];
    ref += static_cast<double>(l1) * std::fabs(xi) + static_cast<double>(l2) * xi * xi;
    const double gi = g0[i] + 0.5 * (l1 * dsign(x[i]) + 2.0 * l2 * x[i]);
    EXPECT_NEAR(g[i], gi, 1e-6) << i;
  }
  EXPECT_NEAR(acc, 1.5 + 3.0 * ref, 1e-9);
  // Null pointers: nothing written; n == 0: nothing added.
  acc = 0.0;
  be.l1_l2_penalty(37, x.data(), l1, l2, 1.0, &acc, 1.0f, nullptr);
  EXPECT_NEAR(acc, ref, 1e-9);
  be.l1_l2_penalty(0, x.data(), l1, l2, 1.0, &acc, 1.0f, g.data());
  EXPECT_NEAR(acc, ref, 1e-9);
}

// Keras' norm constraints in double over a 3 x 4 x 5 box (norms over the middle axis).
std::vector<double> norm_reference(const std::vector<float>& w, int64_t outer, int64_t reduce,
                                   int64_t inner, double lo, double hi, double rate) {
  std::vector<double> out(w.begin(), w.end());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double s = 0.0;
      for (int64_t r = 0; r < reduce; ++r) {
        const double v = w[static_cast<size_t>((o * reduce + r) * inner + i)];
        s += v * v;
      }
      const double n = std::sqrt(s);
      const double desired = rate * std::min(std::max(n, lo), hi) + (1.0 - rate) * n;
      for (int64_t r = 0; r < reduce; ++r)
        out[static_cast<size_t>((o * reduce + r) * inner + i)] *= desired / (1e-7 + n);
    }
  return out;
}

TEST(RegularizationOps, NormConstraintsMatchReference) {
  CpuBackend be(0, 1);
  struct Case {
    double lo, hi, rate;
  };
  for (const Case& c : {Case{0.0, 1.0, 1.0}, Case{1.0, 1.0, 1.0}, Case{0.5, 1.2, 0.7}}) {
    std::vector<float> w = wave(60, 0.37, 0.1, 1.3);
    const std::vector<double> ref = norm_reference(w, 3, 4, 5, c.lo, c.hi, c.rate);
    be.norm_constraint(3, 4, 5, static_cast<float>(c.lo), static_cast<float>(c.hi),
                       static_cast<float>(c.rate), w.data());
    for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], ref[i], 2e-6) << i;
  }
  std::vector<float> w{-1.0f, 0.0f, 2.0f, -0.5f, NAN};
  be.non_neg_constraint(5, w.data());
  EXPECT_EQ(w[0], 0.0f);
  EXPECT_EQ(w[2], 2.0f);
  EXPECT_EQ(w[3], 0.0f);
  EXPECT_TRUE(std::isnan(w[4]));
}

TEST(RegularizationConfig, KerasFormsAndAxes) {
  const Json l1 = keras_regularizer("l1", "t");
  EXPECT_EQ(
      l1.dump(),
      R"({"module":"keras.regularizers","class_name":"L1","config":{"l1":0.009999999776482582},"registered_name":null})");
  const Json l12 = keras_regularizer(
      Json{{"module", "keras.regularizers"}, {"class_name", "L1L2"}, {"config", {{"l2", 0.5}}}},
      "t");
  EXPECT_EQ(l12["config"].dump(), R"({"l1":0.0,"l2":0.5})");
  EXPECT_THROW(keras_regularizer("l1_l2", "t"), Error);  // Keras rejects it too
  EXPECT_THROW(keras_regularizer(Json{{"class_name", "L2"}, {"config", {{"l2", -1}}}}, "t"), Error);
  EXPECT_EQ(keras_constraint("max_norm", "t")["config"].dump(), R"({"max_value":2,"axis":0})");
  EXPECT_THROW(keras_constraint("maxnorm", "t"), Error);
  const Json mx = keras_constraint(
      Json{{"class_name", "MaxNorm"}, {"config", {{"max_value", 1.5}, {"axis", {0, 1, 2}}}}}, "t");
  ConstraintSpec s = constraint_spec(mx, Shape{3, 3, 2, 8}, "t");
  EXPECT_EQ(s.outer, 1);
  EXPECT_EQ(s.reduce, 18);
  EXPECT_EQ(s.inner, 8);
  s = constraint_spec(keras_constraint("unit_norm", "t"), Shape{6, 4}, "t");
  EXPECT_EQ(s.reduce, 6);
  EXPECT_EQ(s.inner, 4);
  const Json gap =
      keras_constraint(Json{{"class_name", "UnitNorm"}, {"config", {{"axis", {0, 2}}}}}, "t");
  EXPECT_THROW(constraint_spec(gap, Shape{2, 3, 4}, "t"), Error);
}

// Keras' OrthogonalRegularizer in double on a rows x cols matrix.
double orthogonal_reference(const std::vector<double>& w, int64_t rows, int64_t cols, double factor,
                            bool by_rows) {
  const int64_t m = by_rows ? rows : cols, k = by_rows ? cols : rows;
  auto at = [&](int64_t i, int64_t j) {  // element j of vector i
    return by_rows ? w[static_cast<size_t>(i * cols + j)] : w[static_cast<size_t>(j * cols + i)];
  };
  std::vector<double> norm(static_cast<size_t>(m), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < k; ++j) norm[static_cast<size_t>(i)] += at(i, j) * at(i, j);
    norm[static_cast<size_t>(i)] = std::sqrt(norm[static_cast<size_t>(i)]);
  }
  double s = 0.0;
  for (int64_t a = 0; a < m; ++a)
    for (int64_t b = 0; b < m; ++b) {
      if (a == b) continue;
      double p = 0.0;
      for (int64_t j = 0; j < k; ++j) p += at(a, j) * at(b, j);
      s += std::fabs(p / (norm[static_cast<size_t>(a)] * norm[static_cast<size_t>(b)]));
    }
  const double pairs = static_cast<double>(m) * (m - 1.0) / 2.0;
  return factor * 0.5 * s / pairs;
}

// A Dense(4) on 6 features whose kernel carries `reg`.
std::shared_ptr<const Graph> dense_with(const Json& kernel_reg, const Json& bias_reg) {
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(make_input_layer(Shape{6}));
  Json cfg{{"name", "dense"},
           {"units", 4},
           {"kernel_regularizer", kernel_reg},
           {"bias_regularizer", bias_reg}};
  layers.push_back(make_layer("Dense", cfg, 7));
  return chain(std::move(layers));
}

TEST(Regularization, OrthogonalValueAndFiniteDifferences) {
  for (bool by_rows : {true, false}) {
    CpuBackend be(0, 1);
    const Json reg = keras_regularizer(
        Json{{"class_name", "OrthogonalRegularizer"},
             {"config", {{"factor", 0.3}, {"mode", by_rows ? "rows" : "columns"}}}},
        "t");
    auto g = dense_with(reg, keras_regularizer("l2", "t"));
    Regularization rz(*g, be);
    const int64_t nf = g->param_floats();
    std::vector<float> params(static_cast<size_t>(nf), 0.0f), grads(params.size(), 0.0f);
    const auto& kp = g->params()[0];
    const auto& bp = g->params()[1];
    const std::vector<float> w = wave(24, 0.9, 0.4, 1.0, 0.1), b = wave(4, 1.7, 0.2);
    std::copy(w.begin(), w.end(), params.begin() + kp.offset);
    std::copy(b.begin(), b.end(), params.begin() + bp.offset);
    double acc = 0.0;
    rz.add_weight_penalties(params.data(), grads.data(), &acc, 2.0);
    const std::vector<double> wd(w.begin(), w.end());
    double bl2 = 0.0;
    for (float v : b) bl2 += 0.01 * v * v;
    EXPECT_NEAR(acc, 2.0 * (orthogonal_reference(wd, 6, 4, 0.3, by_rows) + bl2), 1e-6);
    for (size_t i = 0; i < wd.size(); ++i) {
      std::vector<double> up = wd, dn = wd;
      const double h = 1e-6;
      up[i] += h;
      dn[i] -= h;
      const double fd = (orthogonal_reference(up, 6, 4, 0.3, by_rows) -
                         orthogonal_reference(dn, 6, 4, 0.3, by_rows)) /
                        (2 * h);
      EXPECT_NEAR(grads[static_cast<size_t>(kp.offset) + i], fd, 2e-5) << i << " rows " << by_rows;
    }
    for (size_t i = 0; i < b.size(); ++i)
      EXPECT_NEAR(grads[static_cast<size_t>(bp.offset) + i], 0.02 * b[i], 1e-7);
  }
}

TEST(Regularization, OrthogonalNeedsRankTwoAndTwoVectors) {
  CpuBackend be(0, 1);
  const Json reg = keras_regularizer(
      Json{{"class_name", "OrthogonalRegularizer"}, {"config", {{"mode", "rows"}}}}, "t");
  auto g = dense_with(nullptr, reg);  // the bias has rank 1
  EXPECT_THROW(Regularization(*g, be), Error);
}

TEST(RegularizationOps, CudaMatchesCpu) {
  MR_REQUIRE_GPUS(1);
  auto cpu = make_cpu_backend(0, 2);
  auto gpu = make_cuda_backend(0, 0);
  const int64_t n = 5003;
  const std::vector<float> x = wave(n, 0.31, 0.7, 2.0), g0 = wave(n, 0.13, 0.2);
  auto up = [&](const std::vector<float>& v) {
    DeviceBuffer b = gpu->allocate(v.size() * sizeof(float));
    gpu->upload(b.get(), v.data(), v.size() * sizeof(float));
    return b;
  };
  auto down = [&](const DeviceBuffer& b, size_t len) {
    std::vector<float> v(len);
    gpu->download(v.data(), b.get(), len * sizeof(float));
    return v;
  };
  DeviceBuffer dx = up(x), dg = up(g0);
  DeviceBuffer dacc = gpu->allocate(sizeof(double));
  const double start = 0.25;
  gpu->upload(dacc.get(), &start, sizeof(double));
  gpu->l1_l2_penalty(n, static_cast<float*>(dx.get()), 0.01f, 0.02f, 2.0,
                     static_cast<double*>(dacc.get()), 0.5f, static_cast<float*>(dg.get()));
  std::vector<float> g = g0;
  double acc = start;
  cpu->l1_l2_penalty(n, x.data(), 0.01f, 0.02f, 2.0, &acc, 0.5f, g.data());
  double gacc = 0.0;
  gpu->download(&gacc, dacc.get(), sizeof(double));
  EXPECT_NEAR(gacc, acc, 1e-9 * std::fabs(acc));
  const std::vector<float> gg = down(dg, static_cast<size_t>(n));
  for (size_t i = 0; i < gg.size(); ++i) EXPECT_EQ(gg[i], g[i]) << i;
  // Norm constraints and NonNeg.
  std::vector<float> w = wave(7 * 9 * 11, 0.41, 0.3, 1.5);
  DeviceBuffer dw = up(w);
  gpu->norm_constraint(7, 9, 11, 0.3f, 1.1f, 0.6f, static_cast<float*>(dw.get()));
  cpu->norm_constraint(7, 9, 11, 0.3f, 1.1f, 0.6f, w.data());
  gpu->non_neg_constraint(7 * 9 * 11, static_cast<float*>(dw.get()));
  cpu->non_neg_constraint(7 * 9 * 11, w.data());
  const std::vector<float> gw = down(dw, w.size());
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(gw[i], w[i], 1e-6) << i;
  // The orthogonal regularizer's off-diagonal op.
  const int64_t m = 37;
  const std::vector<float> p = wave(m * m, 0.77, 0.1);
  DeviceBuffer dp = up(p), ddp = gpu->allocate(p.size() * sizeof(float));
  gpu->upload(dacc.get(), &start, sizeof(double));
  gpu->offdiag_abs_penalty(m, static_cast<float*>(dp.get()), 0.2f, 3.0,
                           static_cast<double*>(dacc.get()), static_cast<float*>(ddp.get()));
  std::vector<float> cdp(p.size());
  acc = start;
  cpu->offdiag_abs_penalty(m, p.data(), 0.2f, 3.0, &acc, cdp.data());
  gpu->download(&gacc, dacc.get(), sizeof(double));
  EXPECT_NEAR(gacc, acc, 1e-9 * std::fabs(acc));
  const std::vector<float> gdp = down(ddp, p.size());
  for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(gdp[i], cdp[i]) << i;
}

}  // namespace
}  // namespace mr
