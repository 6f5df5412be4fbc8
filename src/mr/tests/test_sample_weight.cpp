// Sample weights and non-finite data on the host side of a step: the finite
// scan, class weights turned into per-sample weights, a dataset batch with a
// NaN named by component, batch and row, and weighted training steps against
// a double-precision reference on 1 and 3 replicas.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/array_source.h"
#include "data/class_weight_source.h"
#include "data/dataset_source.h"
#include "data/finite_check.h"
#include "data/sources.h"
#include "data/transforms.h"
#include "tests/graphs.h"
#include "train/model.h"

namespace mr {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(FiniteCheck, FindsTheFirstNonFiniteValueAcrossBlocks) {
  for (int64_t n : {0, 1, 7, 511, 512, 513, 1500, 4099}) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[i] = std::ldexp(std::sin(0.3f * i), static_cast<int>(i % 250) - 125);  // subnormal..huge
    if (n > 0) v[n - 1] = std::numeric_limits<float>::max();
    EXPECT_EQ(first_non_finite(v.data(), n), -1) << n;
    for (float bad : {kNaN, kInf, -kInf}) {
      for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
        if (n == 0) continue;
        std::vector<float> w = v;
        w[at] = bad;
        if (at + 1 < n) w[n - 1] = kNaN;  // a later one is not reported first
        EXPECT_EQ(first_non_finite(w.data(), n), at) << n << " " << at;
      }
    }
  }
  EXPECT_STREQ(non_finite_name(kNaN), "a NaN");
  EXPECT_STREQ(non_finite_name(kInf), "an Inf");
  EXPECT_STREQ(non_finite_name(-kInf), "a -Inf");
}

TEST(ClassWeight, TargetClassRoundsHalfToEvenOrTakesTheFirstArgmax) {
  const float half[] = {0.5f, 1.5f, 2.5f, 2.4f, 0.6f};
  const int64_t want[] = {0, 2, 2, 2, 1};  // np.round
  for (int i = 0; i < 5; ++i) EXPECT_EQ(target_class(half + i, 1), want[i]) << half[i];
  const float rows[] = {0.1f, 0.7f, 0.2f, 0.4f, 0.1f, 0.4f};
  EXPECT_EQ(target_class(rows, 3), 1);
  EXPECT_EQ(target_class(rows + 3, 3), 0);  // a tie: the first maximum
}

TEST(ClassWeight, SourceAppendsThePerSampleWeightsOfTheClasses) {
  auto data = std::make_shared<ArrayData>();
  data->rows = 5;
  data->widths = {1, 1};
  data->parts = {{1, 2, 3, 4, 5}, {0, 1, 2, 3, 1}};
  auto inner = std::make_shared<ArraySource>(data, 3, false, 0);
  ClassWeightSource s(inner, 2, {0.5f, 1.0f, 4.0f}, "x");  // class 3: beyond the table
  s.reset(0);
  HostBatch a, b, c;
  ASSERT_TRUE(s.next(a));
  ASSERT_TRUE(s.next(b));
  EXPECT_FALSE(s.next(c));
  ASSERT_EQ(a.parts.size(), 3u);
  EXPECT_EQ(a.parts[2].width, 1);
  EXPECT_EQ(std::vector<float>(a.parts[2].data, a.parts[2].data + 3),
            (std::vector<float>{0.5f, 1.0f, 4.0f}));  // still valid after the next batch
  EXPECT_EQ(std::vector<float>(b.parts[2].data, b.parts[2].data + 2),
            (std::vector<float>{1.0f, 1.0f}));
  // A batch that carries sample weights already is refused.
  data->widths.push_back(1);
  data->parts.push_back({1, 1, 1, 1, 1});
  ClassWeightSource both(std::make_shared<ArraySource>(data, 3, false, 0), 2, {1.0f}, "x");
  both.reset(0);
  try {
    both.next(a);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::value);
    EXPECT_NE(std::string(e.what()).find("at the same time"), std::string::npos) << e.what();
  }
}

DatasetPtr slices(std::vector<float> x, std::vector<float> y) {
  auto data = std::make_shared<SourceData>();
  data->rows = static_cast<int64_t>(y.size());
  Column cx, cy;
  cx.shape = {2};
  cx.f32 = std::move(x);
  cy.f32 = std::move(y);
  data->cols = {cx, cy};
  return std::make_shared<TensorSlicesDataset>(data);
}

TEST(DatasetSource, NamesTheComponentBatchAndRowOfANonFiniteValue) {
  std::vector<float> x(20, 1.0f), y(10, 0.0f);
  x[2 * 6 + 1] = kNaN;  // element 6: row 3 of batch 2 in batches of 4
  y[9] = -kInf;         // element 9: row 2 of batch 3
  auto expect_error = [](DatasetSource& s, const std::string& want) {
    s.reset(0);
    HostBatch b;
    try {
      while (s.next(b)) {
      }
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::value);
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  DatasetSource s(make_batch(slices(x, y), 4, false), false);
  s.describe("x", {"the features", "the targets"});
  expect_error(s, "`x` has a NaN in the features (component 1) at row 3 of batch 2");
  // Every pass counts its batches from 1.
  expect_error(s, "at row 3 of batch 2");
  x[2 * 6 + 1] = 1.0f;
  DatasetSource t(make_batch(slices(x, y), 4, false), false);
  t.describe("validation_data", {"the features", "the targets"});
  expect_error(t, "`validation_data` has a -Inf in the targets (component 2) at row 2 of batch 3");
  // A component the caller does not use (predict()'s targets) is not checked.
  DatasetSource u(make_batch(slices(x, y), 4, false), false);
  u.describe("x", {"the features"}, 1);
  u.reset(0);
  HostBatch b;
  int batches = 0;
  while (u.next(b)) ++batches;
  EXPECT_EQ(batches, 3);
}

// One dense layer (3 -> 2, linear), mean squared error, SGD.
std::shared_ptr<const Graph> dense_3_2() {
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(make_input_layer(Shape{3}));
  Initializer k = glorot_uniform(5);
  layers.push_back(make_dense(2, Activation::linear, true, k, Initializer{}));
  return chain(std::move(layers));
}

CompileConfig sgd_mse(double lr) {
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::sgd;
  c.optimizer.learning_rate = lr;
  c.loss.kind = LossKind::mean_squared_error;
  return c;
}

TEST(Model, WeightedStepMatchesAReferenceOnOneAndThreeReplicas) {
  const int64_t rows = 7, in = 3, out = 2;
  std::vector<float> x(rows * in), y(rows * out), w(rows);
  for (int64_t i = 0; i < rows * in; ++i) x[i] = std::cos(0.7f * i);
  for (int64_t i = 0; i < rows * out; ++i) y[i] = std::sin(1.1f * i);
  for (int64_t r = 0; r < rows; ++r) w[r] = 0.25f * r - 0.5f;  // negative, zero, positive
  HostBatch b;
  b.rows = rows;
  b.parts = {{x.data(), in}, {y.data(), out}, {w.data(), 1}};
  std::vector<std::vector<float>> after;
  for (int replicas : {1, 3}) {
    std::vector<DeviceSpec> devs;
    for (int i = 0; i < replicas; ++i) devs.push_back(DeviceSpec{DeviceKind::cpu, i});
    Model m(dense_3_2(), devs, 1);
    m.compile(sgd_mse(0.1));
    const std::vector<float> p0 = m.get_params();
    const auto& prm = m.graph().params();
    m.train_step(b);
    after.push_back(m.get_params());
    // Reference: loss = sum_r w_r mean_j (z - y)^2 / rows.
    std::vector<double> gw(in * out, 0.0), gb(out, 0.0);
    double loss = 0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < out; ++j) {
        double z = p0[prm[1].offset + j];
        for (int64_t k = 0; k < in; ++k) z += double{x[r * in + k]} * p0[prm[0].offset + k * out + j];
        const double e = z - y[r * out + j];
        loss += w[r] * e * e / out;
        const double d = w[r] * 2.0 * e / out / rows;
        gb[j] += d;
        for (int64_t k = 0; k < in; ++k) gw[k * out + j] += double{x[r * in + k]} * d;
      }
    }
    for (int64_t i = 0; i < in * out; ++i)
      EXPECT_NEAR(after.back()[prm[0].offset + i], p0[prm[0].offset + i] - 0.1 * gw[i], 1e-6);
    for (int64_t j = 0; j < out; ++j)
      EXPECT_NEAR(after.back()[prm[1].offset + j], p0[prm[1].offset + j] - 0.1 * gb[j], 1e-6);
    EXPECT_NEAR(m.read_metrics()[0], loss / rows, 1e-6);
  }
  for (size_t i = 0; i < after[0].size(); ++i) EXPECT_NEAR(after[0][i], after[1][i], 1e-6);
}

TEST(Model, SampleWeightsOfTheWrongWidthOrCountAreRefused) {
  Model m(dense_3_2(), {DeviceSpec{}}, 1);
  m.compile(sgd_mse(0.1));
  std::vector<float> x(6, 0.0f), y(4, 0.0f), w(4, 1.0f);
  HostBatch b;
  b.rows = 2;
  b.parts = {{x.data(), 3}, {y.data(), 2}, {w.data(), 2}};
  EXPECT_THROW(m.train_step(b), Error);
  b.parts = {{x.data(), 3}, {y.data(), 2}, {w.data(), 1}, {w.data(), 1}};
  EXPECT_THROW(m.train_step(b), Error);
  b.parts = {{x.data(), 3}, {y.data(), 2}, {w.data(), 1}};
  EXPECT_NO_THROW(m.train_step(b));
}

}  // namespace
}  // namespace mr
