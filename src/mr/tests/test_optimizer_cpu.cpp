// Optimizer updates of the CPU backend against the Keras 3 formulas evaluated
// by hand in double, for one and two steps; 1- and 2-thread teams must agree
// bit for bit (the updates are element-wise).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_backend.h"

namespace mr {
namespace {

using Vec = std::vector<float>;

const Vec kW0 = {0.5f, -1.0f, 2.0f, 0.0f};
const Vec kG1 = {0.1f, -0.2f, 0.3f, -0.4f};
const Vec kG2 = {-0.05f, 0.4f, 0.3f, 0.1f};

void expect_close(const Vec& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 2e-6 * (1 + std::fabs(want[i]))) << what << " [" << i << "]";
}

TEST(CpuOptimizer, SgdPlainMomentumNesterovWeightDecay) {
  auto be = make_cpu_backend(0, 1);
  const double lr = 0.1, mu = 0.9, wd_lr = 0.01;
  for (int variant = 0; variant < 4; ++variant) {
    const bool momentum = variant >= 1, nesterov = variant >= 2, decay = variant == 3;
    Vec w = kW0, m(4, 0.0f);
    std::vector<double> wr(kW0.begin(), kW0.end()), mr(4, 0.0);
    for (const Vec* g : {&kG1, &kG2}) {
      be->sgd_update(4, w.data(), g->data(), momentum ? m.data() : nullptr, static_cast<float>(lr),
                     momentum ? static_cast<float>(mu) : 0.0f, nesterov,
                     decay ? static_cast<float>(wd_lr) : 0.0f);
      for (size_t i = 0; i < 4; ++i) {
        const double gi = (*g)[i];
        if (decay) wr[i] -= wr[i] * wd_lr;
        if (!momentum) {
          wr[i] -= lr * gi;
        } else {
          mr[i] = mu * mr[i] - lr * gi;
          wr[i] += nesterov ? mu * mr[i] - lr * gi : mr[i];
        }
      }
      expect_close(w, wr, "w");
      if (momentum) expect_close(m, mr, "m");
    }
  }
  // One plain step by hand: 0.5 - 0.1 * 0.1 = 0.49.
  Vec w = kW0;
  be->sgd_update(4, w.data(), kG1.data(), nullptr, 0.1f, 0.0f, false, 0.0f);
  EXPECT_NEAR(w[0], 0.49, 1e-7);
}

TEST(CpuOptimizer, AdamAmsgradAndAdamW) {
  auto be = make_cpu_backend(0, 1);
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-7;
  for (int variant = 0; variant < 3; ++variant) {
    const bool amsgrad = variant == 1, adamw = variant == 2;
    const double wd_lr = adamw ? 0.004 * lr : 0.0;
    Vec w = kW0, m(4, 0.0f), v(4, 0.0f), vhat(4, 0.0f);
    std::vector<double> wr(kW0.begin(), kW0.end()), mr(4, 0.0), vr(4, 0.0), vhr(4, 0.0);
    // Second step's gradient is smaller in magnitude on element 2 so that
    // amsgrad's max(vhat, v) keeps the old v there.
    const Vec g2 = {-0.05f, 0.4f, 0.001f, 0.1f};
    int t = 0;
    for (const Vec* g : {&kG1, &g2}) {
      ++t;
      const double alpha = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
      be->adam_update(4, w.data(), g->data(), m.data(), v.data(), amsgrad ? vhat.data() : nullptr,
                      static_cast<float>(alpha), static_cast<float>(b1), static_cast<float>(b2),
                      static_cast<float>(eps), static_cast<float>(wd_lr));
      for (size_t i = 0; i < 4; ++i) {
        const double gi = (*g)[i];
        wr[i] -= wr[i] * wd_lr;
        mr[i] += (gi - mr[i]) * (1 - b1);
        vr[i] += (gi * gi - vr[i]) * (1 - b2);
        double denom_v = vr[i];
        if (amsgrad) {
          vhr[i] = std::max(vhr[i], vr[i]);
          denom_v = vhr[i];
        }
        wr[i] -= mr[i] * alpha / (std::sqrt(denom_v) + eps);
      }
      expect_close(w, wr, "w");
      expect_close(m, mr, "m");
      expect_close(v, vr, "v");
      if (amsgrad) expect_close(vhat, vhr, "vhat");
    }
    if (amsgrad) EXPECT_GT(vhat[2], v[2]);
  }
  // First Adam step moves every weight by ~lr * sign(g) (m/sqrt(v) = g/|g|).
  Vec w = kW0, m(4, 0.0f), v(4, 0.0f);
  const float alpha = static_cast<float>(0.01 * std::sqrt(1 - 0.999) / (1 - 0.9));
  be->adam_update(4, w.data(), kG1.data(), m.data(), v.data(), nullptr, alpha, 0.9f, 0.999f, 1e-7f,
                  0.0f);
  EXPECT_NEAR(w[0], 0.5 - 0.01, 1e-6);
  EXPECT_NEAR(w[1], -1.0 + 0.01, 1e-6);
}

TEST(CpuOptimizer, RmspropPlainCenteredMomentum) {
  auto be = make_cpu_backend(0, 1);
  const double lr = 0.01, rho = 0.9, eps = 1e-7, mu = 0.5;
  for (int variant = 0; variant < 4; ++variant) {
    const bool centered = variant == 1 || variant == 3, momentum = variant >= 2;
    const double wd_lr = variant == 3 ? 0.001 : 0.0;
    Vec w = kW0, v(4, 0.0f), a(4, 0.0f), mom(4, 0.0f);
    std::vector<double> wr(kW0.begin(), kW0.end()), vr(4, 0.0), ar(4, 0.0), momr(4, 0.0);
    for (const Vec* g : {&kG1, &kG2}) {
      be->rmsprop_update(4, w.data(), g->data(), v.data(), centered ? a.data() : nullptr,
                         momentum ? mom.data() : nullptr, static_cast<float>(lr),
                         static_cast<float>(rho), momentum ? static_cast<float>(mu) : 0.0f,
                         static_cast<float>(eps), static_cast<float>(wd_lr));
      for (size_t i = 0; i < 4; ++i) {
        const double gi = (*g)[i];
        wr[i] -= wr[i] * wd_lr;
        vr[i] = rho * vr[i] + (1 - rho) * gi * gi;
        double denom = vr[i] + eps;
        if (centered) {
          ar[i] = rho * ar[i] + (1 - rho) * gi;
          denom = vr[i] - ar[i] * ar[i] + eps;
        }
        const double inc = lr * gi / std::sqrt(denom);
        if (momentum) {
          momr[i] = mu * momr[i] + inc;
          wr[i] -= momr[i];
        } else {
          wr[i] -= inc;
        }
      }
      // Centered denominators are differences of small numbers: float32
      // cancellation allows a slightly looser match there.
      for (size_t i = 0; i < 4; ++i)
        EXPECT_NEAR(w[i], wr[i], (centered ? 2e-5 : 2e-6) * (1 + std::fabs(wr[i])))
            << "variant " << variant << " [" << i << "]";
      expect_close(v, vr, "v");
      if (centered) expect_close(a, ar, "a");
    }
  }
  // First plain step by hand: v = 0.1 g^2, w -= lr g / sqrt(0.1 g^2 + eps).
  Vec w = kW0, v(4, 0.0f);
  be->rmsprop_update(4, w.data(), kG1.data(), v.data(), nullptr, nullptr, 0.01f, 0.9f, 0.0f, 1e-7f,
                     0.0f);
  EXPECT_NEAR(w[0], 0.5 - 0.01 * 0.1 / std::sqrt(0.1 * 0.01 + 1e-7), 1e-6);
}

TEST(CpuOptimizer, TeamSizesAgreeBitForBit) {
  auto one = make_cpu_backend(0, 1), two = make_cpu_backend(0, 2);
  const size_t n = 200000;
  Vec w0(n), g(n);
  for (size_t i = 0; i < n; ++i) {
    w0[i] = std::sin(static_cast<float>(i));
    g[i] = std::cos(static_cast<float>(i) * 0.37f);
  }
  Vec w[2], m[2], v[2], vh[2];
  int t = 0;
  for (Backend* be : {one.get(), two.get()}) {
    w[t] = w0;
    m[t].assign(n, 0.0f);
    v[t].assign(n, 0.0f);
    vh[t].assign(n, 0.0f);
    for (int step = 0; step < 3; ++step) {
      be->adam_update(static_cast<int64_t>(n), w[t].data(), g.data(), m[t].data(), v[t].data(),
                      vh[t].data(), 1e-3f, 0.9f, 0.999f, 1e-7f, 4e-6f);
      be->sgd_update(static_cast<int64_t>(n), w[t].data(), g.data(), m[t].data(), 0.01f, 0.9f, true,
                     0.0f);
      be->rmsprop_update(static_cast<int64_t>(n), w[t].data(), g.data(), v[t].data(), vh[t].data(),
                         m[t].data(), 0.001f, 0.9f, 0.5f, 1e-7f, 0.0f);
    }
    ++t;
  }
  EXPECT_EQ(std::memcmp(w[0].data(), w[1].data(), n * 4), 0);
  EXPECT_EQ(std::memcmp(m[0].data(), m[1].data(), n * 4), 0);
}

}  // namespace
}  // namespace mr
