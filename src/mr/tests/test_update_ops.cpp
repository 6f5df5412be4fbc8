// The update-pipeline ops (core/backend.h, issue 13) against double-precision
// references of Keras 3's formulas: segmented sums of squares, the three
// clippings, the rules of Adagrad, Adadelta, Adamax, Nadam, Ftrl, Lion and
// Lamb over three steps, EMA and gradient accumulation. Every test runs on the
// CPU backend and, where a GPU is present, on the CUDA backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "nn/optimizer.h"
#include "test_util.h"

namespace mr {
namespace {

using Vec = std::vector<float>;
using DVec = std::vector<double>;

// A backend and device copies of host vectors (host memory on the CPU).
struct Dev {
  std::unique_ptr<Backend> be;
  std::vector<DeviceBuffer> keep;
  template <typename T>
  T* put(const std::vector<T>& v) {
    keep.push_back(be->allocate(std::max<size_t>(1, v.size()) * sizeof(T)));
    if (!v.empty()) be->upload(keep.back().get(), v.data(), v.size() * sizeof(T));
    return static_cast<T*>(keep.back().get());
  }
  template <typename T>
  std::vector<T> get(const T* p, size_t n) {
    std::vector<T> out(n);
    be->download(out.data(), p, n * sizeof(T));
    return out;
  }
};

std::vector<std::unique_ptr<Backend>> backends() {
  std::vector<std::unique_ptr<Backend>> out;
  out.push_back(make_cpu_backend(0, 2));
  if (cuda_device_count() > 0) out.push_back(make_cuda_backend(0, 0));
  return out;
}

void expect_close(const Vec& got, const DVec& want, double tol, const char* what,
                  const std::string& dev) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i])))
        << what << " [" << i << "] on " << dev;
}

// Two variables: 5 floats then 3 floats (segments of the flat buffer).
const std::vector<int64_t> kSeg = {0, 5, 5, 3};
constexpr double kPi = 3.14159265358979323846;
const Vec kW = {0.5f, -1.0f, 2.0f, 0.0f, 0.25f, -0.75f, 1.5f, 0.3f};
const std::vector<Vec> kG = {{0.1f, -0.2f, 0.3f, -0.4f, 0.05f, 0.6f, -0.1f, 0.2f},
                             {-0.05f, 0.4f, 0.3f, 0.1f, -0.2f, 0.1f, 0.3f, -0.4f},
                             {0.2f, 0.1f, -0.3f, 0.0f, 0.15f, -0.5f, 0.2f, 0.1f}};

TEST(UpdateOps, SegmentSumsqAndClipping) {
  for (auto& b : backends()) {
    Dev d{std::move(b), {}};
    const std::string dev = d.be->name();
    const int64_t* seg = d.put(kSeg);
    const Vec g0 = {3.0f, 4.0f, 0.0f, 0.0f, 0.0f, 1.0f, -2.0f, 2.0f};  // norms 5 and 3
    float* g = d.put(g0);
    double* sq = d.put(DVec(2, 0.0));
    d.be->segment_sumsq(2, seg, g, sq);
    const DVec sums = d.get(sq, 2);
    EXPECT_DOUBLE_EQ(sums[0], 25.0) << dev;
    EXPECT_DOUBLE_EQ(sums[1], 9.0) << dev;
    // clipnorm 4: the first variable scaled by 4/5, the second unchanged.
    d.be->clip_gradients(GradientClip::norm, 4.0f, 2, seg, g, sq);
    expect_close(d.get(g, 8), {2.4, 3.2, 0, 0, 0, 1, -2, 2}, 1e-7, "clipnorm", dev);
    // global_clipnorm 2: global norm sqrt(34).
    float* g2 = d.put(g0);
    d.be->segment_sumsq(2, seg, g2, sq);
    d.be->clip_gradients(GradientClip::global_norm, 2.0f, 2, seg, g2, sq);
    DVec want;
    for (float v : g0) want.push_back(v * 2.0 / std::sqrt(34.0));
    expect_close(d.get(g2, 8), want, 1e-6, "global_clipnorm", dev);
    // A global norm below the limit leaves the gradient unchanged.
    float* g3 = d.put(g0);
    d.be->segment_sumsq(2, seg, g3, sq);
    d.be->clip_gradients(GradientClip::global_norm, 10.0f, 2, seg, g3, sq);
    expect_close(d.get(g3, 8), DVec(g0.begin(), g0.end()), 1e-7, "global_clipnorm (no-op)", dev);
    // clipvalue 1.5, NaN stays NaN.
    Vec gv = g0;
    gv[2] = std::nanf("");
    float* g4 = d.put(gv);
    d.be->clip_gradients(GradientClip::value, 1.5f, 2, seg, g4, sq);
    const Vec out = d.get(g4, 8);
    EXPECT_TRUE(std::isnan(out[2])) << dev;
    EXPECT_FLOAT_EQ(out[0], 1.5f) << dev;
    EXPECT_FLOAT_EQ(out[6], -1.5f) << dev;
    EXPECT_FLOAT_EQ(out[5], 1.0f) << dev;
  }
}

// Keras 3's update_step of each rule in double, three steps from kW.
struct Ref {
  DVec w, s0, s1;
};

Ref reference(OptimizerConfig::Kind kind, const OptimizerConfig& c, double lr) {
  Ref r{DVec(kW.begin(), kW.end()), DVec(8, 0.0), DVec(8, 0.0)};
  if (kind == OptimizerConfig::Kind::adagrad || kind == OptimizerConfig::Kind::ftrl)
    std::fill(r.s0.begin(), r.s0.end(), c.initial_accumulator_value);
  double u_product = 1.0;
  for (int t = 1; t <= 3; ++t) {
    const DVec g(kG[t - 1].begin(), kG[t - 1].end());
    const double b1 = c.beta_1, b2 = c.beta_2, eps = c.epsilon;
    if (kind == OptimizerConfig::Kind::nadam) u_product *= b1 * (1 - 0.5 * std::pow(0.96, t));
    DVec upd(8);
    for (size_t i = 0; i < 8; ++i) {
      double& w = r.w[i];
      double& a = r.s0[i];
      double& z = r.s1[i];
      const double gi = g[i];
      switch (kind) {
        case OptimizerConfig::Kind::adagrad:
          a += gi * gi;
          w -= lr * gi / std::sqrt(a + eps);
          break;
        case OptimizerConfig::Kind::adadelta: {
          const double rho = c.rho_adadelta;
          a = rho * a + (1 - rho) * gi * gi;
          const double delta = -std::sqrt(z + eps) * gi / std::sqrt(a + eps);
          z = rho * z + (1 - rho) * delta * delta;
          w += lr * delta;
          break;
        }
        case OptimizerConfig::Kind::adamax:
          a += (gi - a) * (1 - b1);
          z = std::max(b2 * z, std::fabs(gi));
          w -= lr * a / ((1 - std::pow(b1, t)) * (z + eps));
          break;
        case OptimizerConfig::Kind::nadam: {
          const double u_t = b1 * (1 - 0.5 * std::pow(0.96, t));
          const double u_t1 = b1 * (1 - 0.5 * std::pow(0.96, t + 1));
          a += (gi - a) * (1 - b1);
          z += (gi * gi - z) * (1 - b2);
          const double m_hat = u_t1 * a / (1 - u_product * u_t1) + (1 - u_t) * gi / (1 - u_product);
          const double v_hat = z / (1 - std::pow(b2, t));
          w -= m_hat * lr / (std::sqrt(v_hat) + eps);
          break;
        }
        case OptimizerConfig::Kind::ftrl: {
          const double p = -c.learning_rate_power;
          const double l2 = c.l2 + c.beta / (2 * lr);
          const double gt = gi + 2 * c.l2_shrinkage * w;
          const double na = a + gi * gi;
          z += gt - (std::pow(na, p) - std::pow(a, p)) / lr * w;
          const double quad = std::pow(na, p) / lr + 2 * l2;
          const double clipped = std::min(std::max(z, -c.l1), c.l1);
          w = (clipped - z) / quad;
          a = na;
          break;
        }
        case OptimizerConfig::Kind::lion: {
          const double cc = a * b1 + gi * (1 - b1);
          w -= lr * (cc > 0 ? 1.0 : (cc < 0 ? -1.0 : 0.0));
          a = a * b2 + gi * (1 - b2);
          break;
        }
        case OptimizerConfig::Kind::lamb:
          a += (gi - a) * (1 - b1);
          z += (gi * gi - z) * (1 - b2);
          upd[i] = (a / (1 - std::pow(b1, t))) / (std::sqrt(z / (1 - std::pow(b2, t))) + eps);
          break;
        default:
          break;
      }
    }
    if (kind == OptimizerConfig::Kind::lamb) {
      for (size_t k = 0; k < 2; ++k) {
        const size_t off = static_cast<size_t>(kSeg[2 * k]),
                     n = static_cast<size_t>(kSeg[2 * k + 1]);
        double wn = 0, rn = 0;
        for (size_t i = off; i < off + n; ++i) {
          wn += r.w[i] * r.w[i];
          rn += upd[i] * upd[i];
        }
        wn = std::sqrt(wn);
        rn = std::sqrt(rn);
        const double ratio = wn > 0 && rn > 0 ? wn / rn : 1.0;
        for (size_t i = off; i < off + n; ++i) r.w[i] -= ratio * lr * upd[i];
      }
    }
  }
  return r;
}

OptimizerConfig config_of(OptimizerConfig::Kind kind) {
  OptimizerConfig c;
  c.kind = kind;
  c.learning_rate = 0.05;
  if (kind == OptimizerConfig::Kind::lion) c.beta_2 = 0.99;
  if (kind == OptimizerConfig::Kind::ftrl) {
    c.l1 = 0.01;
    c.l2 = 0.02;
    c.l2_shrinkage = 0.03;
    c.beta = 0.1;
    c.learning_rate_power = -0.5;
  }
  return c;
}

TEST(UpdateOps, RulesMatchKerasFormulasOverThreeSteps) {
  using K = OptimizerConfig::Kind;
  for (K kind : {K::adagrad, K::adadelta, K::adamax, K::nadam, K::ftrl, K::lion, K::lamb}) {
    const OptimizerConfig c = config_of(kind);
    const Ref want = reference(kind, c, c.learning_rate);
    for (auto& b : backends()) {
      Dev d{std::move(b), {}};
      const std::string dev = std::string(d.be->name()) + " " + optimizer_class_name(kind);
      float* w = d.put(kW);
      const int slots = rule_slot_count(c);
      std::vector<float*> s;
      for (int k = 0; k < slots; ++k) s.push_back(d.put(Vec(8, slot_initial_value(c, k))));
      const int64_t* seg = d.put(kSeg);
      double* sums = d.put(DVec(4, 0.0));
      for (int t = 0; t < 3; ++t) {
        float* g = d.put(kG[static_cast<size_t>(t)]);
        const StepScalars* sc = d.be->stage_scalars(step_scalars(c, t));
        if (kind == K::lamb) {
          d.be->lamb_moments(8, w, g, s[0], s[1], g, sc, update_hyper(c));
          d.be->segment_sumsq(2, seg, w, sums + 2);
          d.be->segment_sumsq(2, seg, g, sums);
          d.be->lamb_apply(2, seg, w, g, sums + 2, sums, sc);
        } else {
          apply_update(*d.be, c, sc, 8, w, g, s);
        }
      }
      expect_close(d.get(w, 8), want.w, 2e-5, "w", dev);
      expect_close(d.get(s[0], 8), want.s0, 2e-5, "slot 0", dev);
      if (slots > 1) expect_close(d.get(s[1], 8), want.s1, 2e-5, "slot 1", dev);
    }
  }
}

TEST(UpdateOps, EmaAndAccumulation) {
  for (auto& b : backends()) {
    Dev d{std::move(b), {}};
    const std::string dev = d.be->name();
    float* avg = d.put(Vec(8, 0.0f));
    float* w = d.put(kW);
    StepScalars s;
    s.ema_momentum = 0.0f;  // the first step copies
    d.be->ema_update(8, avg, w, d.be->stage_scalars(s));
    expect_close(d.get(avg, 8), DVec(kW.begin(), kW.end()), 0, "ema first", dev);
    float* w2 = d.put(kG[0]);
    s.ema_momentum = 0.9f;
    d.be->ema_update(8, avg, w2, d.be->stage_scalars(s));
    DVec want;
    for (size_t i = 0; i < 8; ++i) want.push_back(0.9 * kW[i] + 0.1 * kG[0][i]);
    expect_close(d.get(avg, 8), want, 1e-6, "ema", dev);

    float* acc = d.put(Vec(8, 0.0f));
    float* g = d.put(kG[0]);
    d.be->axpy(8, 1.0f, g, acc);
    float* g2 = d.put(kG[1]);
    d.be->accumulate_apply(8, g2, acc, 2.0f);
    DVec mean;
    for (size_t i = 0; i < 8; ++i) mean.push_back((double(kG[0][i]) + kG[1][i]) / 2);
    expect_close(d.get(g2, 8), mean, 1e-7, "accumulated mean", dev);
    expect_close(d.get(acc, 8), DVec(8, 0.0), 0, "accumulator reset", dev);
  }
}

TEST(UpdateOps, NadamUProductAndScheduleValues) {
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::nadam;
  double u = 1.0;
  for (int t = 1; t <= 5; ++t) u *= 0.9 * (1 - 0.5 * std::pow(0.96, t));
  EXPECT_NEAR(nadam_u_product(c, 4), u, 1e-7);
  // Accumulating over 2 steps: steps 2 and 4 apply, as Keras' updates 1 and 2.
  c.gradient_accumulation_steps = 2;
  const double u2 = 0.9 * (1 - 0.5 * std::pow(0.96, 1)) * 0.9 * (1 - 0.5 * std::pow(0.96, 2));
  EXPECT_NEAR(nadam_u_product(c, 4), u2, 1e-7);
  EXPECT_FALSE(applies_update(c, 0));
  EXPECT_TRUE(applies_update(c, 1));

  LrSchedule s;
  s.kind = LrSchedule::Kind::exponential_decay;
  s.initial_learning_rate = 0.1;
  s.decay_steps = 10;
  s.decay_rate = 0.5;
  EXPECT_NEAR(lr_schedule_value(s, 5), 0.1 * std::pow(0.5, 0.5), 1e-8);
  s.staircase = true;
  EXPECT_NEAR(lr_schedule_value(s, 15), 0.05, 1e-8);
  s = LrSchedule{};
  s.kind = LrSchedule::Kind::piecewise_constant_decay;
  s.boundaries = {2, 4};
  s.values = {0.1, 0.05, 0.01};
  EXPECT_FLOAT_EQ(lr_schedule_value(s, 2), 0.1f);
  EXPECT_FLOAT_EQ(lr_schedule_value(s, 3), 0.05f);
  EXPECT_FLOAT_EQ(lr_schedule_value(s, 5), 0.01f);
  s = LrSchedule{};
  s.kind = LrSchedule::Kind::cosine_decay;
  s.initial_learning_rate = 0.0;
  s.decay_steps = 10;
  s.has_warmup = true;
  s.warmup_target = 0.1;
  s.warmup_steps = 4;
  EXPECT_NEAR(lr_schedule_value(s, 2), 0.05, 1e-8);
  EXPECT_NEAR(lr_schedule_value(s, 9), 0.1 * 0.5 * (1 + std::cos(kPi * 0.5)), 1e-7);
  s = LrSchedule{};
  s.kind = LrSchedule::Kind::cosine_decay_restarts;
  s.initial_learning_rate = 1.0;
  s.decay_steps = 10;  // first_decay_steps; periods 10, 20, ...
  EXPECT_NEAR(lr_schedule_value(s, 15), 0.5 * (1 + std::cos(kPi * 0.25)), 1e-6);
}

}  // namespace
}  // namespace mr
