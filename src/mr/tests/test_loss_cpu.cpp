// Losses and metrics of the CPU backend: hand-computed values (Keras 3 /
// TensorFlow conventions), gradients against central finite differences of a
// double-precision reference of the per-sample loss, label checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"

namespace mr {
namespace {

using Vec = std::vector<float>;
constexpr double kEps = 1e-7;

double clipd(double p) { return std::min(std::max(p, kEps), 1.0 - kEps); }

// Per-sample loss of one row, in double (the reference the FD runs on).
double ref_loss(LossKind kind, bool logits, const std::vector<double>& p, const float* t) {
  const size_t n = p.size();
  switch (kind) {
    case LossKind::sparse_categorical_crossentropy: {
      const size_t y = static_cast<size_t>(t[0]);
      if (logits) {
        const double mx = *std::max_element(p.begin(), p.end());
        double s = 0;
        for (double v : p) s += std::exp(v - mx);
        return mx + std::log(s) - p[y];
      }
      double s = 0;
      for (double v : p) s += clipd(v);
      return std::log(s) - std::log(clipd(p[y]));
    }
    case LossKind::categorical_crossentropy: {
      double loss = 0;
      if (logits) {
        const double mx = *std::max_element(p.begin(), p.end());
        double s = 0;
        for (double v : p) s += std::exp(v - mx);
        for (size_t j = 0; j < n; ++j) loss += t[j] * (mx + std::log(s) - p[j]);
        return loss;
      }
      double s = 0;
      for (double v : p) s += v;
      for (size_t j = 0; j < n; ++j) loss -= t[j] * std::log(clipd(p[j] / s));
      return loss;
    }
    case LossKind::binary_crossentropy: {
      double loss = 0;
      for (size_t j = 0; j < n; ++j) {
        if (logits) {
          const double x = p[j];
          loss += std::max(x, 0.0) - x * t[j] + std::log1p(std::exp(-std::fabs(x)));
        } else {
          const double c = clipd(p[j]);
          loss -= t[j] * std::log(c) + (1 - t[j]) * std::log(1 - c);
        }
      }
      return loss / static_cast<double>(n);
    }
    case LossKind::mean_squared_error: {
      double loss = 0;
      for (size_t j = 0; j < n; ++j) loss += (p[j] - t[j]) * (p[j] - t[j]);
      return loss / static_cast<double>(n);
    }
  }
  return NAN;
}

struct LossRun {
  double acc;
  Vec dpred;
};

LossRun run_loss(Backend& be, LossKind kind, bool logits, int64_t rows, int64_t cols,
                 const Vec& pred, const Vec& target, float gs = 1.0f,
                 const float* sample_weight = nullptr) {
  LossRun r{1.0, Vec(pred.size(), -7.0f)};  // acc starts at 1: the op adds to it
  be.loss(kind, LossParams{logits}, rows, cols, pred.data(), target.data(), sample_weight, gs,
          r.dpred.data(), &r.acc);
  r.acc -= 1.0;
  return r;
}

TEST(CpuLoss, HandComputedValues) {
  auto be = make_cpu_backend(0, 1);
  using K = LossKind;
  struct Case {
    K kind;
    bool logits;
    int64_t rows, cols;
    Vec pred, target;
    double expected;  // sum over rows of the per-sample values
  };
  const Case cases[] = {
      {K::sparse_categorical_crossentropy, true, 1, 3, {1, 2, 3}, {2}, 0.40760596444438013},
      {K::sparse_categorical_crossentropy,
       false,
       1,
       3,
       {0.1f, 0.2f, 0.7f},
       {2},
       0.35667494393873245},
      // A zero probability is clipped to 1e-7 before the log.
      {K::sparse_categorical_crossentropy, false, 1, 3, {0, 0.5f, 0.5f}, {0}, 16.118095750958314},
      // Keras normalises the clipped probabilities (log + softmax CE): log 3.
      {K::sparse_categorical_crossentropy,
       false,
       1,
       3,
       {0.2f, 0.2f, 0.2f},
       {0},
       1.0986122886681098},
      // Keras' documented example: per sample 0.10536, 0.11653, 0.06188.
      {K::categorical_crossentropy,
       false,
       3,
       3,
       {.9f, .05f, .05f, .05f, .89f, .06f, .05f, .01f, .94f},
       {1, 0, 0, 0, 1, 0, 0, 0, 1},
       0.10536051565782628 + 0.11653381625595151 + 0.06187540371808753},
      {K::categorical_crossentropy, false, 1, 2, {2, 6}, {0, 1}, 0.2876820724517809},
      {K::categorical_crossentropy, true, 1, 2, {0.5f, -1.0f}, {0.2f, 0.8f}, 1.4014132779827526},
      {K::binary_crossentropy,
       false,
       2,
       2,
       {0.6f, 0.4f, 0.4f, 0.6f},
       {0, 1, 0, 0},
       0.916290731874155 + 0.7135581778200728},
      {K::binary_crossentropy,
       true,
       1,
       4,
       {-18.6f, 0.51f, 2.94f, -12.8f},
       {0, 1, 0, 1},
       4.065457949781097},
      {K::mean_squared_error, false, 2, 2, {1, 2, 0, 0}, {0, 4, 0, 1}, 2.5 + 0.5},
  };
  for (const Case& c : cases) {
    const LossRun r = run_loss(*be, c.kind, c.logits, c.rows, c.cols, c.pred, c.target);
    EXPECT_NEAR(r.acc, c.expected, 2e-6 * (1 + c.expected))
        << "kind " << static_cast<int>(c.kind) << " logits " << c.logits;
  }
}

TEST(CpuLoss, GradientsMatchFiniteDifferences) {
  auto be = make_cpu_backend(0, 2);
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> logit(-3, 3), prob(0.05f, 0.95f);
  const int64_t rows = 6, cols = 5;
  const float gs = 0.5f;
  for (LossKind kind :
       {LossKind::sparse_categorical_crossentropy, LossKind::categorical_crossentropy,
        LossKind::binary_crossentropy, LossKind::mean_squared_error}) {
    for (bool logits : {false, true}) {
      if (kind == LossKind::mean_squared_error && logits) continue;
      Vec pred(static_cast<size_t>(rows * cols)), target;
      for (auto& v : pred)
        v = logits || kind == LossKind::mean_squared_error ? logit(gen) : prob(gen);
      if (kind == LossKind::sparse_categorical_crossentropy) {
        for (int64_t r = 0; r < rows; ++r) target.push_back(static_cast<float>(r % cols));
      } else {
        target.assign(pred.size(), 0.0f);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c) {
            float& t = target[static_cast<size_t>(r * cols + c)];
            if (kind == LossKind::categorical_crossentropy) t = c == (r % cols) ? 1.0f : 0.0f;
            if (kind == LossKind::binary_crossentropy) t = static_cast<float>((r + c) % 3) / 2.0f;
            if (kind == LossKind::mean_squared_error) t = logit(gen);
          }
      }
      const LossRun r = run_loss(*be, kind, logits, rows, cols, pred, target, gs);
      double total = 0;
      for (int64_t row = 0; row < rows; ++row) {
        const float* t = kind == LossKind::sparse_categorical_crossentropy
                             ? &target[static_cast<size_t>(row)]
                             : &target[static_cast<size_t>(row * cols)];
        std::vector<double> p(static_cast<size_t>(cols));
        for (int64_t c = 0; c < cols; ++c)
          p[static_cast<size_t>(c)] = pred[static_cast<size_t>(row * cols + c)];
        total += ref_loss(kind, logits, p, t);
        for (int64_t c = 0; c < cols; ++c) {
          const double h = 1e-5;
          std::vector<double> pp = p, pm = p;
          pp[static_cast<size_t>(c)] += h;
          pm[static_cast<size_t>(c)] -= h;
          const double fd =
              gs * (ref_loss(kind, logits, pp, t) - ref_loss(kind, logits, pm, t)) / (2 * h);
          ASSERT_NEAR(r.dpred[static_cast<size_t>(row * cols + c)], fd, 1e-3 * std::fabs(fd) + 1e-6)
              << "kind " << static_cast<int>(kind) << " logits " << logits << " at " << row << ","
              << c;
        }
      }
      EXPECT_NEAR(r.acc, total, 1e-6 * (1 + total));
    }
  }
}

TEST(CpuLoss, ClippedProbabilitiesGetNoGradient) {
  auto be = make_cpu_backend(0, 1);
  // Column 0 holds probability 0 (clipped up to 1e-7): its gradient is 0.
  const Vec pred = {0.0f, 0.3f, 0.7f};
  LossRun r = run_loss(*be, LossKind::sparse_categorical_crossentropy, false, 1, 3, pred, {1});
  EXPECT_EQ(r.dpred[0], 0.0f);
  EXPECT_NE(r.dpred[1], 0.0f);
  r = run_loss(*be, LossKind::categorical_crossentropy, false, 1, 3, pred, {1, 0, 0});
  EXPECT_NEAR(r.acc, -std::log(1e-7), 1e-4);
  r = run_loss(*be, LossKind::binary_crossentropy, false, 1, 3, {0.0f, 1.0f, 0.5f}, {1, 0, 1});
  EXPECT_EQ(r.dpred[0], 0.0f);
  EXPECT_EQ(r.dpred[1], 0.0f);
  EXPECT_NEAR(r.dpred[2], -2.0 / 3.0, 1e-6);  // -t/p / cols
}

TEST(CpuLoss, LabelsOutsideTheClassesThrow) {
  auto be = make_cpu_backend(0, 2);
  const Vec pred(4 * 3, 0.1f);
  for (float bad : {3.0f, -1.0f, 1.5f, std::nanf("")}) {
    const Vec target = {0, 1, bad, 2};
    try {
      run_loss(*be, LossKind::sparse_categorical_crossentropy, true, 4, 3, pred, target);
      FAIL() << "label " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::value);
      EXPECT_NE(std::string(e.what()).find("at row 2 is outside 0..2"), std::string::npos)
          << e.what();
    }
  }
}

TEST(CpuLoss, SplitRowsGiveTheSameGradients) {
  auto one = make_cpu_backend(0, 1), two = make_cpu_backend(0, 2);
  const int64_t rows = 4096, cols = 10;
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> d(-4, 4);
  Vec pred(static_cast<size_t>(rows * cols)), labels(static_cast<size_t>(rows));
  for (auto& v : pred) v = d(gen);
  for (int64_t r = 0; r < rows; ++r) labels[static_cast<size_t>(r)] = static_cast<float>(r % cols);
  const LossRun a = run_loss(*one, LossKind::sparse_categorical_crossentropy, true, rows, cols,
                             pred, labels, 1.0f / rows);
  const LossRun b = run_loss(*two, LossKind::sparse_categorical_crossentropy, true, rows, cols,
                             pred, labels, 1.0f / rows);
  EXPECT_EQ(std::memcmp(a.dpred.data(), b.dpred.data(), a.dpred.size() * 4), 0);
  EXPECT_NEAR(a.acc, b.acc, 1e-9 * a.acc);  // double sums, added in another order
  // dpred may be null: only the value is accumulated.
  double acc = 0;
  two->loss(LossKind::sparse_categorical_crossentropy, LossParams{true}, rows, cols, pred.data(),
            labels.data(), nullptr, 1.0f, nullptr, &acc);
  EXPECT_NEAR(acc, b.acc, 1e-9 * acc);
}

// Keras multiplies each per-sample loss by its weight (and so its gradient);
// the weights never normalise the sum (the caller divides by the number of
// samples). Row by row: weighted = w_r * unweighted, a weight of 0 gives a
// zero gradient, and a NaN weight a NaN loss.
TEST(CpuLoss, SampleWeightsScaleEachRowsLossAndGradient) {
  auto be = make_cpu_backend(0, 2);
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> prob(0.05f, 0.95f);
  const int64_t rows = 5, cols = 4;
  const Vec w = {2.0f, 0.0f, 0.5f, 1.0f, 3.25f};
  for (LossKind kind :
       {LossKind::sparse_categorical_crossentropy, LossKind::categorical_crossentropy,
        LossKind::binary_crossentropy, LossKind::mean_squared_error}) {
    Vec pred(static_cast<size_t>(rows * cols)), target;
    for (auto& v : pred) v = prob(gen);
    if (kind == LossKind::sparse_categorical_crossentropy) {
      for (int64_t r = 0; r < rows; ++r) target.push_back(static_cast<float>((r * 3) % cols));
    } else {
      target.assign(pred.size(), 0.0f);
      for (int64_t r = 0; r < rows; ++r) target[static_cast<size_t>(r * cols + r % cols)] = 1.0f;
    }
    double want = 0;
    Vec want_d(pred.size());
    for (int64_t r = 0; r < rows; ++r) {
      // One row alone, unweighted.
      const Vec p1(pred.begin() + r * cols, pred.begin() + (r + 1) * cols);
      const Vec t1 = kind == LossKind::sparse_categorical_crossentropy
                         ? Vec{target[static_cast<size_t>(r)]}
                         : Vec(target.begin() + r * cols, target.begin() + (r + 1) * cols);
      const LossRun one = run_loss(*be, kind, false, 1, cols, p1, t1, 0.25f);
      want += static_cast<double>(static_cast<float>(one.acc) * w[static_cast<size_t>(r)]);
      for (int64_t c = 0; c < cols; ++c)
        want_d[static_cast<size_t>(r * cols + c)] = one.dpred[static_cast<size_t>(c)];
    }
    const LossRun got = run_loss(*be, kind, false, rows, cols, pred, target, 0.25f, w.data());
    EXPECT_NEAR(got.acc, want, 1e-6 * want) << static_cast<int>(kind);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const size_t i = static_cast<size_t>(r * cols + c);
        EXPECT_NEAR(got.dpred[i], want_d[i] * w[static_cast<size_t>(r)],
                    1e-6 * std::fabs(want_d[i] * w[static_cast<size_t>(r)]))
            << static_cast<int>(kind) << " at " << r << "," << c;
      }
    EXPECT_EQ(got.dpred[static_cast<size_t>(cols)], 0.0f);  // row 1 weighs 0
  }
  // A NaN weight makes the sum NaN (it is not dropped).
  const Vec wn = {1.0f, std::nanf("")};
  const LossRun r = run_loss(*be, LossKind::mean_squared_error, false, 2, 1, {0.5f, 0.25f},
                             {0.0f, 0.0f}, 1.0f, wn.data());
  EXPECT_TRUE(std::isnan(r.acc));
}

// ---- metrics ------------------------------------------------------------------------

std::pair<double, double> run_metric(Backend& be, MetricKind kind, float threshold, int64_t rows,
                                     int64_t cols, const Vec& pred, const Vec& target) {
  double acc[2] = {0.5, 2.0};  // the op adds to what is there
  MetricSpec m;
  m.kind = kind;
  m.threshold = threshold;
  be.metric(m, rows, cols, pred.data(), target.data(), nullptr, acc);
  return {acc[0] - 0.5, acc[1] - 2.0};
}

TEST(CpuMetric, HandComputedValues) {
  auto be = make_cpu_backend(0, 2);
  // sparse: argmax rows = 1, 0 (tie -> first max), 2; labels 1, 1, 2 -> 2 hits.
  auto r = run_metric(*be, MetricKind::sparse_categorical_accuracy, 0.5f, 3, 3,
                      {0.1f, 0.6f, 0.3f, 0.4f, 0.4f, 0.2f, 0, 0, 1}, {1, 1, 2});
  EXPECT_DOUBLE_EQ(r.first, 2.0);
  EXPECT_DOUBLE_EQ(r.second, 3.0);
  // Keras' documented example: 0.5.
  r = run_metric(*be, MetricKind::categorical_accuracy, 0.5f, 2, 3,
                 {0.1f, 0.9f, 0.8f, 0.05f, 0.95f, 0}, {0, 0, 1, 0, 1, 0});
  EXPECT_DOUBLE_EQ(r.first, 1.0);
  EXPECT_DOUBLE_EQ(r.second, 2.0);
  // Keras' documented example: [[1],[1],[0],[0]] vs [[0.98],[1],[0],[0.6]] -> 0.75.
  r = run_metric(*be, MetricKind::binary_accuracy, 0.5f, 4, 1, {0.98f, 1, 0, 0.6f}, {1, 1, 0, 0});
  EXPECT_DOUBLE_EQ(r.first, 3.0);
  EXPECT_DOUBLE_EQ(r.second, 4.0);
  // Strictly greater than the threshold; per-sample mean over cols.
  r = run_metric(*be, MetricKind::binary_accuracy, 0.7f, 1, 4, {0.7f, 0.71f, 0.2f, 0.9f},
                 {0, 1, 1, 1});
  EXPECT_DOUBLE_EQ(r.first, 0.75);
  r = run_metric(*be, MetricKind::mean_absolute_error, 0.5f, 2, 2, {1, 2, 0, 0}, {0, 4, -1, 1});
  EXPECT_DOUBLE_EQ(r.first, 1.5 + 1.0);
  EXPECT_DOUBLE_EQ(r.second, 2.0);
}

TEST(CpuMetric, LargeBatchMatchesSerialCount) {
  auto one = make_cpu_backend(0, 1), two = make_cpu_backend(0, 2);
  const int64_t rows = 5000, cols = 10;
  std::mt19937 gen(8);
  std::uniform_real_distribution<float> d(0, 1);
  Vec pred(static_cast<size_t>(rows * cols)), labels(static_cast<size_t>(rows));
  double hits = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t best = 0;
    for (int64_t c = 0; c < cols; ++c) {
      pred[static_cast<size_t>(r * cols + c)] = d(gen);
      if (pred[static_cast<size_t>(r * cols + c)] > pred[static_cast<size_t>(r * cols + best)])
        best = c;
    }
    labels[static_cast<size_t>(r)] = static_cast<float>(r % cols);
    hits += best == r % cols;
  }
  EXPECT_DOUBLE_EQ(
      run_metric(*one, MetricKind::sparse_categorical_accuracy, 0.5f, rows, cols, pred, labels)
          .first,
      hits);
  EXPECT_DOUBLE_EQ(
      run_metric(*two, MetricKind::sparse_categorical_accuracy, 0.5f, rows, cols, pred, labels)
          .first,
      hits);
}

}  // namespace
}  // namespace mr
