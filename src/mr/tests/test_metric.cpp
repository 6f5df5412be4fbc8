// The metric op (Backend::metric) and the host-side finalize (nn/metric.h):
// states against a double-precision reference written from Keras 3's
// definitions (thresholds compared directly, not through the op's buckets),
// with and without sample weights, on 1 and 2 CPU threads and on a GPU;
// finalized values against the examples of Keras' documentation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "nn/metric.h"
#include "tests/test_util.h"

namespace mr {
namespace {

using Vec = std::vector<float>;
constexpr double kEps = 1e-7;

int64_t argmax_ref(const float* x, int64_t n) {
  return std::max_element(x, x + n) - x;  // the first maximum
}

// The state Keras 3 accumulates for one call, in double.
std::vector<double> ref_state(const MetricSpec& m, int64_t rows, int64_t cols, const Vec& p,
                              const Vec& t, const Vec* w) {
  std::vector<double> s(static_cast<size_t>(metric_state_size(m, cols)), 0.0);
  const int64_t tw = metric_target_width(m, cols);
  for (int64_t r = 0; r < rows; ++r) {
    double wr = w ? (*w)[static_cast<size_t>(r)] : 1.0;
    const float* pr = p.data() + r * cols;
    const float* tr = t.data() + r * tw;
    auto mean = [&](double v) {
      s[0] += wr * v;
      s[1] += wr;
    };
    switch (m.kind) {
      case MetricKind::mean_squared_error:
      case MetricKind::root_mean_squared_error: {
        double e = 0;
        for (int64_t c = 0; c < cols; ++c) e += std::pow(double{pr[c]} - tr[c], 2);
        mean(e / cols);
        break;
      }
      case MetricKind::mean_absolute_percentage_error: {
        double e = 0;
        for (int64_t c = 0; c < cols; ++c)
          e += std::fabs(double{tr[c]} - pr[c]) / std::max(std::fabs(double{tr[c]}), kEps);
        mean(100 * e / cols);
        break;
      }
      case MetricKind::top_k_categorical_accuracy:
      case MetricKind::sparse_top_k_categorical_accuracy: {
        const int64_t y = m.kind == MetricKind::sparse_top_k_categorical_accuracy
                              ? static_cast<int64_t>(tr[0])
                              : argmax_ref(tr, cols);
        int64_t above = 0;
        for (int64_t c = 0; c < cols; ++c) above += pr[c] > pr[y];
        mean(above < m.k ? 1.0 : 0.0);
        break;
      }
      case MetricKind::binary_crossentropy: {
        double e = 0;
        for (int64_t c = 0; c < cols; ++c) {
          const double tc = tr[c] * (1.0 - m.label_smoothing) + 0.5 * m.label_smoothing;
          const double q = std::min(std::max(double{pr[c]}, kEps), 1 - kEps);
          e -= tc * std::log(q) + (1 - tc) * std::log(1 - q);
        }
        mean(e / cols);
        break;
      }
      case MetricKind::categorical_crossentropy: {
        double mx = pr[argmax_ref(pr, cols)], z = 0, e = 0;
        for (int64_t c = 0; c < cols; ++c) z += std::exp(pr[c] - mx);
        for (int64_t c = 0; c < cols; ++c) {
          const double tc = tr[c] * (1.0 - m.label_smoothing) + m.label_smoothing / cols;
          e -= tc * (pr[c] - mx - std::log(z));  // from logits
        }
        mean(e);
        break;
      }
      case MetricKind::auc: {
        const int64_t n = m.num_thresholds;
        for (int64_t c = 0; c < cols; ++c) {
          const bool label = tr[c] != 0.0f;
          for (int64_t i = 0; i < n; ++i) {
            const double th = i == 0 ? -kEps : i == n - 1 ? 1 + kEps : double(i) / (n - 1);
            const bool pos = pr[c] > th;
            s[static_cast<size_t>((label ? (pos ? 0 : 3) : (pos ? 1 : 2)) * n + i)] += wr;
          }
        }
        break;
      }
      case MetricKind::precision:
      case MetricKind::recall:
        for (int64_t c = 0; c < cols; ++c) {
          if (m.class_id >= 0 && c != m.class_id) continue;
          double v = pr[c];
          if (m.top_k > 0) {
            int64_t rank = 0;
            for (int64_t q = 0; q < cols; ++q) rank += pr[q] > pr[c] || (pr[q] == pr[c] && q < c);
            if (rank >= m.top_k) v = -1e10;
          }
          const bool pos = v > m.threshold, label = tr[c] != 0.0f;
          s[0] += label && pos ? wr : 0;
          s[1] += !label && pos ? wr : 0;
          s[2] += label && !pos ? wr : 0;
        }
        break;
      case MetricKind::fbeta_score:
        for (int64_t c = 0; c < cols; ++c) {
          const double pp = std::isnan(m.threshold) ? (c == argmax_ref(pr, cols) ? 1 : 0)
                                                    : (pr[c] > m.threshold ? 1 : 0);
          s[static_cast<size_t>(c)] += wr * pp * tr[c];
          s[static_cast<size_t>(cols + c)] += wr * pp * (1 - tr[c]);
          s[static_cast<size_t>(2 * cols + c)] += wr * (1 - pp) * tr[c];
          s[static_cast<size_t>(3 * cols + c)] += wr * tr[c];
        }
        break;
      case MetricKind::mean_iou: {
        wr = std::trunc(wr);
        const int64_t a = static_cast<int64_t>(tr[0]), b = argmax_ref(pr, cols);
        if (a >= 0 && a < m.num_classes && b < m.num_classes)
          s[static_cast<size_t>(a * m.num_classes + b)] += wr;
        break;
      }
      default:
        ADD_FAILURE() << "no reference";
    }
  }
  return s;
}

struct Data {
  int64_t rows, cols;
  Vec pred, target, weight;
};

// Random predictions in (0, 1) (never on an AUC bucket boundary) and targets
// of the metric's kind.
Data make_data(const MetricSpec& m, int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(0.001f, 0.999f);
  Data d{rows, cols, Vec(static_cast<size_t>(rows * cols)), {}, Vec(static_cast<size_t>(rows))};
  for (float& v : d.pred) v = u(gen);
  const int64_t tw = metric_target_width(m, cols);
  d.target.resize(static_cast<size_t>(rows * tw));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t y = static_cast<int64_t>(gen() % static_cast<unsigned>(cols));
    for (int64_t c = 0; c < tw; ++c) {
      float v = tw == 1 ? static_cast<float>(y) : (c == y ? 1.0f : 0.0f);
      if (m.kind == MetricKind::mean_squared_error ||
          m.kind == MetricKind::root_mean_squared_error ||
          m.kind == MetricKind::mean_absolute_percentage_error)
        v = 2.0f * u(gen) - 1.0f;
      if (m.kind == MetricKind::auc || m.kind == MetricKind::precision ||
          m.kind == MetricKind::recall || m.kind == MetricKind::binary_crossentropy)
        v = static_cast<float>(gen() % 2u);
      d.target[static_cast<size_t>(r * tw + c)] = v;
    }
    d.weight[static_cast<size_t>(r)] = 0.25f * static_cast<float>(gen() % 9u);
  }
  return d;
}

std::vector<MetricSpec> all_specs() {
  std::vector<MetricSpec> out;
  auto add = [&](MetricKind k) {
    MetricSpec m;
    m.kind = k;
    out.push_back(m);
    return &out.back();
  };
  add(MetricKind::mean_squared_error);
  add(MetricKind::root_mean_squared_error);
  add(MetricKind::mean_absolute_percentage_error);
  add(MetricKind::top_k_categorical_accuracy)->k = 2;
  add(MetricKind::sparse_top_k_categorical_accuracy)->k = 3;
  add(MetricKind::binary_crossentropy)->label_smoothing = 0.1f;
  {
    MetricSpec* m = add(MetricKind::categorical_crossentropy);
    m->from_logits = true;
    m->label_smoothing = 0.2f;
  }
  add(MetricKind::auc)->num_thresholds = 50;
  add(MetricKind::precision);
  add(MetricKind::recall)->top_k = 2;
  {
    MetricSpec* m = add(MetricKind::precision);
    m->class_id = 1;
    m->threshold = 0.3f;
  }
  add(MetricKind::fbeta_score)->threshold = 0.4f;
  add(MetricKind::fbeta_score)->threshold = std::nanf("");
  {
    MetricSpec* m = add(MetricKind::mean_iou);
    m->num_classes = 4;
    m->sparse_y_pred = false;
  }
  return out;
}

std::vector<double> run(Backend& be, const MetricSpec& m, const Data& d, bool weighted) {
  std::vector<double> s(static_cast<size_t>(metric_state_size(m, d.cols)), 1.0);
  be.metric(m, d.rows, d.cols, d.pred.data(), d.target.data(), weighted ? d.weight.data() : nullptr,
            s.data());
  for (double& v : s) v -= 1.0;  // the op adds to what is there
  return s;
}

TEST(Metric, StatesMatchTheReferenceWithAndWithoutWeights) {
  auto one = make_cpu_backend(0, 1), two = make_cpu_backend(0, 2);
  int seed = 1;
  for (const MetricSpec& m : all_specs()) {
    for (int64_t rows : {int64_t{1}, int64_t{7}, int64_t{3000}}) {
      const Data d = make_data(m, rows, 4, static_cast<unsigned>(seed++));
      for (bool weighted : {false, true}) {
        const std::vector<double> want =
            ref_state(m, rows, 4, d.pred, d.target, weighted ? &d.weight : nullptr);
        const std::vector<double> a = run(*one, m, d, weighted), b = run(*two, m, d, weighted);
        ASSERT_EQ(a.size(), want.size());
        // Cross-entropies round each per-sample value to float, as Keras'
        // float32 losses: a sum of positive terms within 2^-24 of each.
        const bool rounded = m.kind == MetricKind::binary_crossentropy ||
                             m.kind == MetricKind::categorical_crossentropy;
        const double tol = rounded ? 1e-7 : 1e-9;
        for (size_t j = 0; j < want.size(); ++j) {
          EXPECT_NEAR(a[j], want[j], tol * std::max(1.0, std::fabs(want[j])))
              << "kind " << static_cast<int>(m.kind) << " rows " << rows << " element " << j;
          EXPECT_NEAR(b[j], a[j], 1e-12 * std::max(1.0, std::fabs(a[j])));
        }
      }
    }
  }
}

double finalize1(const MetricSpec& m, int64_t cols, const std::vector<double>& s) {
  std::vector<double> out(static_cast<size_t>(metric_value_count(m, cols)));
  metric_finalize(m, cols, s.data(), out.data());
  return out[0];
}

double value(const MetricSpec& m, int64_t rows, int64_t cols, const Vec& p, const Vec& t,
             const Vec* w = nullptr) {
  auto be = make_cpu_backend(0, 1);
  std::vector<double> s(static_cast<size_t>(metric_state_size(m, cols)), 0.0);
  be->metric(m, rows, cols, p.data(), t.data(), w ? w->data() : nullptr, s.data());
  return finalize1(m, cols, s);
}

// The examples of Keras 3's docstrings.
TEST(Metric, KerasDocumentedValues) {
  MetricSpec auc;
  auc.kind = MetricKind::auc;
  auc.num_thresholds = 3;
  EXPECT_NEAR(value(auc, 4, 1, {0, 0.5f, 0.3f, 0.9f}, {0, 0, 1, 1}), 0.75, 1e-7);
  MetricSpec prec;
  prec.kind = MetricKind::precision;
  EXPECT_NEAR(value(prec, 4, 1, {1, 0, 1, 1}, {0, 1, 1, 1}), 2.0 / 3.0, 1e-7);
  const Vec w{0, 0, 1, 0};
  EXPECT_NEAR(value(prec, 4, 1, {1, 0, 1, 1}, {0, 1, 1, 1}, &w), 1.0, 1e-7);
  prec.top_k = 2;
  prec.threshold = -1e10f;
  EXPECT_NEAR(value(prec, 1, 4, {0, 0, 1, 1}, {0, 0, 1, 1}), 1.0, 1e-7);
  MetricSpec rec;
  rec.kind = MetricKind::recall;
  EXPECT_NEAR(value(rec, 4, 1, {1, 0, 1, 1}, {0, 1, 1, 1}), 2.0 / 3.0, 1e-7);
  MetricSpec f1;
  f1.kind = MetricKind::fbeta_score;
  f1.threshold = 0.5f;
  auto be = make_cpu_backend(0, 1);
  const Vec fp{0.2f, 0.6f, 0.7f, 0.2f, 0.6f, 0.6f, 0.6f, 0.8f, 0.0f};
  const Vec ft{1, 1, 1, 1, 0, 0, 1, 1, 0};
  std::vector<double> s(12, 0.0), out(3);
  be->metric(f1, 3, 3, fp.data(), ft.data(), nullptr, s.data());
  metric_finalize(f1, 3, s.data(), out.data());
  EXPECT_NEAR(out[0], 0.5, 1e-6);
  EXPECT_NEAR(out[1], 0.8, 1e-6);
  EXPECT_NEAR(out[2], 2.0 / 3.0, 1e-6);
  MetricSpec iou;
  iou.kind = MetricKind::mean_iou;
  iou.num_classes = 2;
  EXPECT_NEAR(value(iou, 4, 1, {0, 1, 0, 1}, {0, 0, 1, 1}), 1.0 / 3.0, 1e-7);
  MetricSpec rmse;
  rmse.kind = MetricKind::root_mean_squared_error;
  EXPECT_NEAR(value(rmse, 2, 2, {1, 1, 1, 0}, {0, 1, 0, 0}), std::sqrt(0.5), 1e-7);
  MetricSpec topk;
  topk.kind = MetricKind::top_k_categorical_accuracy;
  topk.k = 1;
  EXPECT_NEAR(value(topk, 2, 3, {0.05f, 0.95f, 0, 0.1f, 0.8f, 0.1f}, {0, 0, 1, 0, 1, 0}), 0.5,
              1e-7);
}

TEST(Metric, GpuStatesEqualTheCpu) {
  MR_REQUIRE_GPUS(1);
  auto cpu = make_cpu_backend(0, 2);
  auto dev = make_cuda_backend(0, 0);
  int seed = 100;
  for (const MetricSpec& m : all_specs()) {
    const Data d = make_data(m, 1000, 5, static_cast<unsigned>(seed++));
    const std::vector<double> want = run(*cpu, m, d, true);
    auto put = [&](const Vec& v) {
      DeviceBuffer b = dev->allocate(v.size() * sizeof(float));
      dev->upload(b.get(), v.data(), v.size() * sizeof(float));
      return b;
    };
    DeviceBuffer p = put(d.pred), t = put(d.target), w = put(d.weight);
    DeviceBuffer s = dev->allocate(want.size() * sizeof(double));
    dev->metric(m, d.rows, d.cols, static_cast<float*>(p.get()), static_cast<float*>(t.get()),
                static_cast<float*>(w.get()), static_cast<double*>(s.get()));
    std::vector<double> got(want.size());
    dev->download(got.data(), s.get(), got.size() * sizeof(double));
    for (size_t j = 0; j < want.size(); ++j)
      EXPECT_NEAR(got[j], want[j], 1e-9 * std::max(1.0, std::fabs(want[j])))
          << "kind " << static_cast<int>(m.kind) << " element " << j;
  }
}

}  // namespace
}  // namespace mr
