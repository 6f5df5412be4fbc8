// The losses of issue 13 (and label smoothing, ignore_class): each loss's
// per-sample value against a double-precision reference written from Keras
// 3's formulas, its gradient against central finite differences of that
// reference, NaN propagation for every loss, the per-batch parameters, and
// the CUDA kernels against the CPU ones (skipped without a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "core/error.h"
#include "nn/executor.h"
#include "nn/loss.h"
#include "tests/graphs.h"
#include "tests/test_util.h"

namespace mr {
namespace {

using Vec = std::vector<float>;
using D = std::vector<double>;
using K = LossKind;
constexpr double kE = 1e-7;

double clamp(double x, double lo, double hi) { return std::min(std::max(x, lo), hi); }
double sigm(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double mean(const D& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

// The per-sample loss of one row in double, straight from Keras 3's
// keras/src/losses/losses.py (TensorFlow backend).
double ref_loss(K kind, const LossParams& q, const D& p, const D& t0) {
  const size_t n = p.size();
  D t = t0, v(n);
  const double k = static_cast<double>(n);
  switch (kind) {
    case K::categorical_crossentropy: {
      for (auto& x : t) x = x * (1 - q.label_smoothing) + q.label_smoothing / k;
      double s = 0, l = 0;
      if (q.from_logits) {
        double m = *std::max_element(p.begin(), p.end());
        for (double x : p) s += std::exp(x - m);
        for (size_t j = 0; j < n; ++j) l += t[j] * (m + std::log(s) - p[j]);
        return l;
      }
      for (double x : p) s += x;
      for (size_t j = 0; j < n; ++j) l -= t[j] * std::log(clamp(p[j] / s, kE, 1 - kE));
      return l;
    }
    case K::binary_crossentropy:
      for (size_t j = 0; j < n; ++j) {
        const double tj = t[j] * (1 - q.label_smoothing) + 0.5 * q.label_smoothing;
        if (q.from_logits) {
          v[j] = std::log(1 + std::exp(p[j])) - p[j] * tj;
        } else {
          const double c = clamp(p[j], kE, 1 - kE);
          v[j] = -(tj * std::log(c) + (1 - tj) * std::log(1 - c));
        }
      }
      return mean(v);
    case K::huber:
      for (size_t j = 0; j < n; ++j) {
        const double e = std::fabs(p[j] - t[j]);
        v[j] = e <= q.delta ? 0.5 * e * e : q.delta * e - 0.5 * q.delta * q.delta;
      }
      return mean(v);
    case K::mean_absolute_error:
      for (size_t j = 0; j < n; ++j) v[j] = std::fabs(t[j] - p[j]);
      return mean(v);
    case K::mean_absolute_percentage_error:
      for (size_t j = 0; j < n; ++j)
        v[j] = std::fabs((t[j] - p[j]) / std::max(std::fabs(t[j]), kE));
      return 100 * mean(v);
    case K::mean_squared_logarithmic_error:
      for (size_t j = 0; j < n; ++j) {
        const double a = std::log(std::max(p[j], kE) + 1), b = std::log(std::max(t[j], kE) + 1);
        v[j] = (a - b) * (a - b);
      }
      return mean(v);
    case K::log_cosh:
      for (size_t j = 0; j < n; ++j) v[j] = std::log(std::cosh(p[j] - t[j]));
      return mean(v);
    case K::kl_divergence: {
      double s = 0;
      for (size_t j = 0; j < n; ++j) {
        const double a = clamp(t[j], kE, 1), b = clamp(p[j], kE, 1);
        s += a * std::log(a / b);
      }
      return s;
    }
    case K::poisson:
      for (size_t j = 0; j < n; ++j) v[j] = p[j] - t[j] * std::log(p[j] + kE);
      return mean(v);
    case K::cosine_similarity: {
      double sp = 0, st = 0, dot = 0;
      for (size_t j = 0; j < n; ++j) {
        sp += p[j] * p[j];
        st += t[j] * t[j];
        dot += p[j] * t[j];
      }
      return -dot * std::min(1 / std::sqrt(sp), 1e7) * std::min(1 / std::sqrt(st), 1e7);
    }
    case K::hinge:
    case K::squared_hinge:
      for (size_t j = 0; j < n; ++j) {
        const double y = q.binary_labels ? 2 * t[j] - 1 : t[j];
        const double h = std::max(1 - y * p[j], 0.0);
        v[j] = kind == K::hinge ? h : h * h;
      }
      return mean(v);
    case K::categorical_hinge: {
      double pos = 0, neg = -1e300;
      for (size_t j = 0; j < n; ++j) {
        pos += t[j] * p[j];
        neg = std::max(neg, (1 - t[j]) * p[j]);
      }
      return std::max(neg - pos + 1, 0.0);
    }
    case K::binary_focal_crossentropy:
      for (size_t j = 0; j < n; ++j) {
        const double tj = t[j] * (1 - q.label_smoothing) + 0.5 * q.label_smoothing;
        const double y = q.from_logits ? sigm(p[j]) : p[j];
        const double c = clamp(y, kE, 1 - kE);
        const double bce = q.from_logits ? std::log(1 + std::exp(p[j])) - p[j] * tj
                                         : -(tj * std::log(c) + (1 - tj) * std::log(1 - c));
        const double pt = tj * y + (1 - tj) * (1 - y);
        double f = std::pow(1 - pt, q.gamma) * bce;
        if (q.apply_class_balancing) f *= tj * q.alpha + (1 - tj) * (1 - q.alpha);
        v[j] = f;
      }
      return mean(v);
    case K::categorical_focal_crossentropy: {
      D y = p;
      if (q.from_logits) {
        double s = 0;
        for (double x : p) s += std::exp(x);
        for (size_t j = 0; j < n; ++j) y[j] = std::exp(p[j]) / s;
      }
      double s = 0, l = 0;
      for (double x : y) s += x;
      for (size_t j = 0; j < n; ++j) {
        const double tj = t[j] * (1 - q.label_smoothing) + q.label_smoothing / k;
        const double o = clamp(y[j] / s, kE, 1 - kE);
        l += q.alpha * std::pow(1 - o, q.gamma) * (-tj * std::log(o));
      }
      return l;
    }
    default:
      ADD_FAILURE() << "no reference for kind " << static_cast<int>(kind);
      return NAN;
  }
}

struct Case {
  std::string what;
  K kind;
  LossParams q;
  float lo, hi;  // predictions uniform in [lo, hi]
  int targets;   // 0: uniform in [tlo, thi]; 1: one-hot; 2: 0/1; 3: -1/1
  float tlo, thi;
};

LossParams params(bool logits = false, float smoothing = 0.0f) {
  LossParams q;
  q.from_logits = logits;
  q.label_smoothing = smoothing;
  return q;
}

std::vector<Case> cases() {
  std::vector<Case> c;
  LossParams q;
  c.push_back(
      {"cce smoothed", K::categorical_crossentropy, params(false, 0.2f), 0.05f, 1, 1, 0, 0});
  c.push_back(
      {"cce logits smoothed", K::categorical_crossentropy, params(true, 0.1f), -3, 3, 1, 0, 0});
  c.push_back({"bce smoothed", K::binary_crossentropy, params(false, 0.3f), 0.05f, 0.95f, 0, 0, 1});
  c.push_back({"bce logits smoothed", K::binary_crossentropy, params(true, 0.1f), -3, 3, 2, 0, 0});
  q = {};
  c.push_back({"huber", K::huber, q, -3, 3, 0, -3, 3});
  q.delta = 0.4f;
  c.push_back({"huber delta 0.4", K::huber, q, -3, 3, 0, -3, 3});
  q = {};
  c.push_back({"mae", K::mean_absolute_error, q, -3, 3, 0, -3, 3});
  c.push_back({"mape", K::mean_absolute_percentage_error, q, -3, 3, 0, 0.5f, 3});
  c.push_back({"msle", K::mean_squared_logarithmic_error, q, -0.5f, 3, 0, 0, 3});
  c.push_back({"log_cosh", K::log_cosh, q, -3, 3, 0, -3, 3});
  c.push_back({"kld", K::kl_divergence, q, 0.02f, 0.98f, 0, 0, 1});
  c.push_back({"poisson", K::poisson, q, 0.1f, 3, 0, 0, 3});
  c.push_back({"cosine", K::cosine_similarity, q, -2, 2, 0, -2, 2});
  q.binary_labels = true;
  c.push_back({"hinge 0/1", K::hinge, q, -2, 2, 2, 0, 0});
  c.push_back({"squared hinge 0/1", K::squared_hinge, q, -2, 2, 2, 0, 0});
  q.binary_labels = false;
  c.push_back({"hinge -1/1", K::hinge, q, -2, 2, 3, 0, 0});
  c.push_back({"squared hinge -1/1", K::squared_hinge, q, -2, 2, 3, 0, 0});
  c.push_back({"categorical hinge", K::categorical_hinge, q, -2, 2, 1, 0, 0});
  for (bool logits : {false, true})
    for (bool balance : {false, true}) {
      LossParams f = params(logits, balance ? 0.1f : 0.0f);
      f.apply_class_balancing = balance;
      f.alpha = 0.3f;
      f.gamma = balance ? 1.5f : 2.0f;
      c.push_back(
          {std::string("binary focal") + (logits ? " logits" : "") + (balance ? " balanced" : ""),
           K::binary_focal_crossentropy, f, logits ? -3.0f : 0.05f, logits ? 3.0f : 0.95f, 0, 0,
           1});
    }
  for (bool logits : {false, true}) {
    LossParams f = params(logits, logits ? 0.1f : 0.0f);
    f.gamma = logits ? 2.0f : 0.7f;
    f.alpha = 0.4f;
    c.push_back({std::string("categorical focal") + (logits ? " logits" : ""),
                 K::categorical_focal_crossentropy, f, logits ? -3.0f : 0.05f, logits ? 3.0f : 1.0f,
                 1, 0, 0});
  }
  return c;
}

struct Data {
  Vec pred, target;
};

Data make_data(const Case& c, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> up(c.lo, c.hi), ut(c.tlo, c.thi);
  Data d{Vec(static_cast<size_t>(rows * cols)), Vec(static_cast<size_t>(rows * cols), 0.0f)};
  for (auto& v : d.pred) v = up(gen);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k) {
      float& t = d.target[static_cast<size_t>(r * cols + k)];
      if (c.targets == 0) t = ut(gen);
      if (c.targets == 1) t = k == (r * 3 + 1) % cols ? 1.0f : 0.0f;
      if (c.targets == 2) t = static_cast<float>((r + k) % 2);
      if (c.targets == 3) t = (r + k) % 3 == 0 ? -1.0f : 1.0f;
    }
  return d;
}

TEST(Losses, ValuesAndGradientsMatchTheReference) {
  auto be = make_cpu_backend(0, 2);
  const int64_t rows = 7, cols = 5;
  const float gs = 0.75f;
  for (const Case& c : cases()) {
    const Data d = make_data(c, rows, cols, 17);
    Vec grad(d.pred.size(), -9.0f);
    double acc = 0.5;  // the op adds to it
    be->loss(c.kind, c.q, rows, cols, d.pred.data(), d.target.data(), nullptr, gs, grad.data(),
             &acc);
    acc -= 0.5;
    double want = 0;
    for (int64_t r = 0; r < rows; ++r) {
      D p(d.pred.begin() + r * cols, d.pred.begin() + (r + 1) * cols);
      const D t(d.target.begin() + r * cols, d.target.begin() + (r + 1) * cols);
      want += ref_loss(c.kind, c.q, p, t);
      for (int64_t k = 0; k < cols; ++k) {
        const double h = 1e-5, p0 = p[static_cast<size_t>(k)];
        p[static_cast<size_t>(k)] = p0 + h;
        const double up = ref_loss(c.kind, c.q, p, t);
        p[static_cast<size_t>(k)] = p0 - h;
        const double down = ref_loss(c.kind, c.q, p, t);
        p[static_cast<size_t>(k)] = p0;
        const double fd = gs * (up - down) / (2 * h);
        EXPECT_NEAR(grad[static_cast<size_t>(r * cols + k)], fd, 2e-3 * std::fabs(fd) + 2e-5)
            << c.what << " at " << r << "," << k;
      }
    }
    EXPECT_NEAR(acc, want, 2e-6 * (1 + std::fabs(want))) << c.what;
  }
}

// Values printed by Keras 3.15 (TensorFlow backend) for these inputs:
// keras.losses.<fn>([[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]]) summed over
// the two rows (categorical_hinge on one-hot rows [[0, 1], [1, 0]]),
// independent of the reference above.
TEST(Losses, KerasValues) {
  auto be = make_cpu_backend(0, 1);
  struct V {
    K kind;
    LossParams q;
    Vec p, t;
    double want;  // sum over the 2 rows
  };
  LossParams h;
  h.binary_labels = true;  // Keras converts the batch's 0/1 labels
  const Vec p = {0.6f, 0.4f, 0.4f, 0.6f}, t = {0, 1, 0, 0};
  const V vs[] = {
      {K::huber, {}, p, t, 0.310000017285347},                       // [0.18, 0.13]
      {K::log_cosh, {}, p, t, 0.29417961835861206},                  // [0.1701353, 0.1240444]
      {K::hinge, h, p, t, 2.600000023841858},                        // [1.1, 1.5]
      {K::binary_focal_crossentropy, {}, p, t, 0.5356630682945251},  // [0.3298647, 0.2057984]
      {K::categorical_hinge, {}, p, {0, 1, 1, 0}, 2.4},              // [1.2, 1.2]
  };
  for (const V& v : vs) {
    double acc = 0;
    be->loss(v.kind, v.q, 2, 2, v.p.data(), v.t.data(), nullptr, 1.0f, nullptr, &acc);
    EXPECT_NEAR(acc, v.want, 2e-6) << static_cast<int>(v.kind);
  }
}

// A NaN prediction gives a NaN loss for every loss (TensorFlow's clips and
// maxima keep NaN), never a finite clamped value.
TEST(Losses, NaNPredictionsGiveNaNLosses) {
  auto be = make_cpu_backend(0, 1);
  const int64_t rows = 3, cols = 4;
  std::vector<Case> all = cases();
  LossParams plain;
  all.push_back({"sparse", K::sparse_categorical_crossentropy, plain, 0.1f, 0.9f, 0, 0, 0});
  all.push_back(
      {"sparse logits", K::sparse_categorical_crossentropy, params(true), -1, 1, 0, 0, 0});
  all.push_back({"cce", K::categorical_crossentropy, plain, 0.1f, 0.9f, 1, 0, 0});
  all.push_back({"bce", K::binary_crossentropy, plain, 0.1f, 0.9f, 2, 0, 0});
  all.push_back({"bce logits", K::binary_crossentropy, params(true), -1, 1, 2, 0, 0});
  all.push_back({"mse", K::mean_squared_error, plain, -1, 1, 0, -1, 1});
  for (const Case& c : all) {
    for (int64_t at = 0; at < cols; ++at) {
      Data d = make_data(c, rows, cols, 3);
      if (c.kind == K::sparse_categorical_crossentropy) d.target = {1, 0, 3};
      d.pred[static_cast<size_t>(cols + at)] = std::nanf("");
      double acc = 0;
      Vec grad(d.pred.size());
      be->loss(c.kind, c.q, rows, cols, d.pred.data(), d.target.data(), nullptr, 1.0f, grad.data(),
               &acc);
      EXPECT_TRUE(std::isnan(acc)) << c.what << ": NaN at column " << at << " gave " << acc;
    }
  }
  // An infinite error stays infinite.
  const Vec p = {INFINITY, 0.0f}, t = {0.0f, 0.0f};
  for (K kind : {K::mean_squared_error, K::mean_absolute_error, K::huber, K::log_cosh}) {
    double acc = 0;
    be->loss(kind, plain, 1, 2, p.data(), t.data(), nullptr, 1.0f, nullptr, &acc);
    EXPECT_TRUE(std::isinf(acc)) << static_cast<int>(kind);
  }
}

// ignore_class: rows with that label weigh 0 (value and gradient, even for
// a label outside 0..cols-1 such as -1 or 255), the others valid_weight.
TEST(Losses, IgnoreClassMasksRowsAndReweightsTheOthers) {
  auto be = make_cpu_backend(0, 2);
  const int64_t rows = 4, cols = 3;
  const Vec pred = {1, 2, 3, 0.5f, -1, 2, 0, 0, 1, 2, 2, -2};
  for (float ignore : {-1.0f, 255.0f, 1.0f}) {
    const Vec target = {2, ignore, 0, ignore};
    LossConfig c;
    c.kind = K::sparse_categorical_crossentropy;
    c.from_logits = true;
    c.has_ignore = true;
    c.ignore_class = ignore;
    const LossParams q = batch_loss_params(c, target.data(), rows, 1);
    EXPECT_FLOAT_EQ(q.valid_weight, 2.0f);  // 4 rows, 2 valid
    Vec grad(pred.size(), 7.0f);
    double acc = 0;
    be->loss(c.kind, q, rows, cols, pred.data(), target.data(), nullptr, 0.25f, grad.data(), &acc);
    // The valid rows alone, unweighted, then times 2.
    LossParams plain = params(true);
    const Vec p0(pred.begin(), pred.begin() + 3), p2(pred.begin() + 6, pred.begin() + 9);
    const Vec t0 = {2}, t2 = {0};
    Vec g0(3), g2(3);
    double a0 = 0, a2 = 0;
    be->loss(c.kind, plain, 1, cols, p0.data(), t0.data(), nullptr, 0.25f, g0.data(), &a0);
    be->loss(c.kind, plain, 1, cols, p2.data(), t2.data(), nullptr, 0.25f, g2.data(), &a2);
    EXPECT_NEAR(acc, 2 * (a0 + a2), 1e-6);
    for (int k = 0; k < 3; ++k) {
      EXPECT_FLOAT_EQ(grad[static_cast<size_t>(k)], 2 * g0[static_cast<size_t>(k)]);
      EXPECT_EQ(grad[static_cast<size_t>(3 + k)], 0.0f);
      EXPECT_FLOAT_EQ(grad[static_cast<size_t>(6 + k)], 2 * g2[static_cast<size_t>(k)]);
      EXPECT_EQ(grad[static_cast<size_t>(9 + k)], 0.0f);
    }
  }
  // No valid row: every weight is 0 (Keras' divide_no_nan), loss 0.
  const Vec all_ignored = {5, 5, 5, 5};
  LossConfig c;
  c.kind = K::sparse_categorical_crossentropy;
  c.has_ignore = true;
  c.ignore_class = 5;
  EXPECT_EQ(batch_loss_params(c, all_ignored.data(), rows, 1).valid_weight, 0.0f);
  // A label outside the classes that is not ignore_class is still an error.
  const Vec bad = {2, 5, 3, 0};
  double acc = 0;
  EXPECT_THROW(be->loss(c.kind, batch_loss_params(c, bad.data(), rows, 1), rows, cols, pred.data(),
                        bad.data(), nullptr, 1.0f, nullptr, &acc),
               Error);
}

TEST(Losses, HingeLabelsAreConvertedOnlyWhenTheWholeBatchIsBinary) {
  LossConfig c;
  c.kind = K::hinge;
  const Vec binary = {0, 1, 1, 0, 0, 1}, signed_ = {-1, 1, 1, -1, 1, 1}, mixed = {0, 1, -1, 1};
  EXPECT_TRUE(batch_loss_params(c, binary.data(), 3, 2).binary_labels);
  EXPECT_FALSE(batch_loss_params(c, signed_.data(), 3, 2).binary_labels);
  EXPECT_FALSE(batch_loss_params(c, mixed.data(), 2, 2).binary_labels);
  c.kind = K::squared_hinge;
  EXPECT_TRUE(batch_loss_params(c, binary.data(), 3, 2).binary_labels);
  // Other losses keep their parameters.
  c.kind = K::mean_squared_error;
  EXPECT_FALSE(batch_loss_params(c, binary.data(), 3, 2).binary_labels);
}

TEST(Losses, NamesMapToKinds) {
  EXPECT_EQ(loss_kind("huber"), K::huber);
  EXPECT_EQ(loss_kind("kl_divergence"), K::kl_divergence);
  EXPECT_EQ(loss_kind("categorical_focal_crossentropy"), K::categorical_focal_crossentropy);
  EXPECT_EQ(target_width(K::cosine_similarity, 7), 7);
  EXPECT_THROW(loss_kind("dice"), Error);
}

// sample_weight = 2 on every row, trained by SGD, gives the weights of the
// unweighted run at twice the learning rate: a small network through the
// executor, the loss op with weights and sgd_update, several steps.
TEST(Losses, SampleWeightTwoEqualsTwiceTheLearningRate) {
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(make_input_layer(Shape{4}));
  layers.push_back(make_dense(6, Activation::tanh, true, glorot_uniform(3), Initializer{}));
  layers.push_back(make_dense(3, Activation::linear, true, glorot_uniform(4), Initializer{}));
  const auto g = chain(std::move(layers));
  CpuBackend be(0, 1);
  const int64_t rows = 10;
  Vec x(static_cast<size_t>(rows * 4)), labels(static_cast<size_t>(rows)), dense(rows * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.9 * i + 0.2));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<float>(i % 3);
  for (size_t i = 0; i < dense.size(); ++i) dense[i] = static_cast<float>(std::cos(1.3 * i));
  for (K kind : {K::sparse_categorical_crossentropy, K::huber}) {
    const Vec& t = kind == K::huber ? dense : labels;
    LossParams q;
    q.from_logits = true;
    auto train = [&](float weight, float lr) {
      Vec params = g->initial_params(), grads(params.size());
      const Vec sw(static_cast<size_t>(rows), weight);
      Executor ex(*g, be);
      ex.reserve(rows);
      for (uint64_t step = 0; step < 4; ++step) {
        be.upload(ex.input(0), x.data(), x.size() * sizeof(float));
        ex.forward(test_pass(rows, step, params.data()));
        double acc = 0;
        be.loss(kind, q, rows, 3, ex.output(0), t.data(), sw.data(), 1.0f / rows, ex.output_grad(0),
                &acc);
        grads.assign(params.size(), 0.0f);
        ex.backward(test_pass(rows, step, params.data()), grads.data());
        be.sgd_update(static_cast<int64_t>(params.size()), params.data(), grads.data(), nullptr, lr,
                      0.0f, false, 0.0f);
      }
      return params;
    };
    const Vec weighted = train(2.0f, 0.05f), doubled = train(1.0f, 0.1f),
              plain = train(1.0f, 0.05f);
    double moved = 0;
    for (size_t i = 0; i < weighted.size(); ++i) {
      EXPECT_NEAR(weighted[i], doubled[i], 1e-6 * (1 + std::fabs(doubled[i])))
          << static_cast<int>(kind) << " at " << i;
      moved = std::max(moved, static_cast<double>(std::fabs(weighted[i] - plain[i])));
    }
    EXPECT_GT(moved, 1e-3);  // the weights made a difference
  }
}

// The CUDA kernels compute the CPU's row formulas: same values and
// gradients for every loss, with sample weights.
TEST(Losses, CudaMatchesCpu) {
  MR_REQUIRE_GPUS(1);
  auto cpu = make_cpu_backend(0, 2);
  auto dev = make_cuda_backend(0, 0);
  const int64_t rows = 300, cols = 6;  // more rows than one reduction block
  Vec w(static_cast<size_t>(rows));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.25f * static_cast<float>(i % 5);
  for (const Case& c : cases()) {
    const Data d = make_data(c, rows, cols, 29);
    const size_t n = d.pred.size();
    Vec want_g(n), got_g(n);
    double want = 0;
    cpu->loss(c.kind, c.q, rows, cols, d.pred.data(), d.target.data(), w.data(), 0.5f,
              want_g.data(), &want);
    auto bp = dev->allocate(n * 4), bt = dev->allocate(n * 4), bw = dev->allocate(w.size() * 4),
         bg = dev->allocate(n * 4), ba = dev->allocate(sizeof(double));
    dev->upload(bp.get(), d.pred.data(), n * 4);
    dev->upload(bt.get(), d.target.data(), n * 4);
    dev->upload(bw.get(), w.data(), w.size() * 4);
    dev->loss(c.kind, c.q, rows, cols, static_cast<float*>(bp.get()), static_cast<float*>(bt.get()),
              static_cast<float*>(bw.get()), 0.5f, static_cast<float*>(bg.get()),
              static_cast<double*>(ba.get()));
    double got = 0;
    dev->download(&got, ba.get(), sizeof(double));
    dev->download(got_g.data(), bg.get(), n * 4);
    EXPECT_NEAR(got, want, 1e-5 * std::fabs(want)) << c.what;
    for (size_t i = 0; i < n; ++i)
      ASSERT_NEAR(got_g[i], want_g[i], 1e-5 * std::fabs(want_g[i]) + 1e-7) << c.what << " at " << i;
  }
}

}  // namespace
}  // namespace mr
