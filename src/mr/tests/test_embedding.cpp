// Embedding, Normalization and Rescaling: the embedding ops against direct
// references (lookup = the table's rows; gradient = a scatter-add with
// repeated indices summed in index order; 0 indices write zeros), bad
// indices as errors (CPU at once, GPU at the next synchronize), and the
// Normalization / Rescaling layers' outputs and input gradients through a
// chain against hand-computed values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "nn/executor.h"
#include "tests/graphs.h"
#include "tests/test_util.h"

namespace mr {
namespace {

std::vector<float> wave(int64_t n, double a, double b) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(std::sin(a * static_cast<double>(i) + b));
  return v;
}

TEST(EmbeddingOps, LookupIsTheTableRowsAndGradientIsAScatterAdd) {
  const int64_t vocab = 7, dim = 5;
  const std::vector<float> idx = {3, 0, 6, 3, 3, 1, 0};
  const auto n = static_cast<int64_t>(idx.size());
  const auto table = wave(vocab * dim, 0.7, 0.3), dy = wave(n * dim, 0.37, 1.0);
  CpuBackend be(0, 2);
  std::vector<float> y(static_cast<size_t>(n * dim)), dt(static_cast<size_t>(vocab * dim), 9.0f);
  be.embedding_forward(n, vocab, dim, idx.data(), table.data(), y.data());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < dim; ++c)
      EXPECT_EQ(y[i * dim + c], table[static_cast<int64_t>(idx[i]) * dim + c]);
  be.embedding_backward(n, vocab, dim, idx.data(), dy.data(), dt.data());
  for (int64_t v = 0; v < vocab; ++v)
    for (int64_t c = 0; c < dim; ++c) {
      float want = 0.0f;  // float sum in index order: the op's promised order
      for (int64_t i = 0; i < n; ++i)
        if (static_cast<int64_t>(idx[i]) == v) want += dy[i * dim + c];
      EXPECT_EQ(dt[v * dim + c], want) << v << "," << c;
    }
  // Rows 2, 4 and 5 are never looked up: zero gradient. No indices: all zero.
  EXPECT_EQ(dt[2 * dim], 0.0f);
  std::fill(dt.begin(), dt.end(), 9.0f);
  be.embedding_backward(0, vocab, dim, idx.data(), dy.data(), dt.data());
  for (float v : dt) EXPECT_EQ(v, 0.0f);
}

TEST(EmbeddingOps, BadIndicesAreErrorsNamingThem) {
  CpuBackend be(0, 1);
  const auto table = wave(4 * 2, 0.7, 0.3);
  std::vector<float> y(4);
  for (float bad : {-1.0f, 4.0f, 1.5f, std::numeric_limits<float>::quiet_NaN(), 1e9f}) {
    const std::vector<float> idx = {0.0f, bad};
    try {
      be.embedding_forward(2, 4, 2, idx.data(), table.data(), y.data());
      ADD_FAILURE() << "no error for index " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::value);
      EXPECT_NE(std::string(e.what()).find("position 1"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("0..3"), std::string::npos) << e.what();
    }
  }
}

TEST(EmbeddingOps, CudaMatchesCpuAndReportsBadIndices) {
  MR_REQUIRE_GPUS(1);
  auto cpu = make_cpu_backend(0, 2);
  auto gpu = make_cuda_backend(0, 0);
  const int64_t vocab = 300, dim = 70, n = 1000;
  std::vector<float> idx(n);
  for (int64_t i = 0; i < n; ++i) idx[i] = static_cast<float>((i * 37 + i / 7) % vocab);
  const auto table = wave(vocab * dim, 0.7, 0.3), dy = wave(n * dim, 0.37, 1.0);
  std::vector<float> y(n * dim), dt(vocab * dim);
  cpu->embedding_forward(n, vocab, dim, idx.data(), table.data(), y.data());
  cpu->embedding_backward(n, vocab, dim, idx.data(), dy.data(), dt.data());
  auto up = [&](const std::vector<float>& v) {
    DeviceBuffer b = gpu->allocate(v.size() * sizeof(float));
    gpu->upload(b.get(), v.data(), v.size() * sizeof(float));
    return b;
  };
  auto gi = up(idx), gt = up(table), gdy = up(dy);
  DeviceBuffer gy = gpu->allocate(y.size() * 4), gdt = up(std::vector<float>(dt.size(), 5.0f));
  auto f = [](const DeviceBuffer& b) { return static_cast<float*>(b.get()); };
  gpu->embedding_forward(n, vocab, dim, f(gi), f(gt), f(gy));
  gpu->embedding_backward(n, vocab, dim, f(gi), f(gdy), f(gdt));
  std::vector<float> y2(y.size()), dt2(dt.size());
  gpu->download(y2.data(), gy.get(), y2.size() * 4);
  gpu->download(dt2.data(), gdt.get(), dt2.size() * 4);
  EXPECT_EQ(y2, y);
  EXPECT_EQ(dt2, dt);  // the same sums in the same order: bit-identical
  idx[17] = -3.0f;
  auto bad = up(idx);
  gpu->embedding_forward(n, vocab, dim, f(bad), f(gt), f(gy));
  try {
    gpu->synchronize();
    ADD_FAILURE() << "no error for a bad index on the GPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("position 17"), std::string::npos) << e.what();
  }
  gpu->synchronize();  // the word was reset: no second error
}

// Input(3) -> Dense(3) -> layer -> Dense(3), both Dense the identity (the
// executor needs trainable variables, and the first Dense's bias gradient
// carries the layer's input gradient). Returns the layer's output and, for
// dy = 1, the input gradient summed over rows.
struct Pass {
  std::vector<float> y, dx;
};
Pass run_layer(std::unique_ptr<Layer> layer, const std::vector<float>& x,
               const std::vector<std::vector<float>>* state_values = nullptr) {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{3}));
  l.push_back(make_dense(3, Activation::linear, true, Initializer{}, Initializer{}));
  l.push_back(std::move(layer));
  l.push_back(make_dense(3, Activation::linear, true, Initializer{}, Initializer{}));
  auto g = chain(std::move(l));
  CpuBackend be(0, 1);
  const auto rows = static_cast<int64_t>(x.size() / 3);
  Executor ex(*g, be);
  ex.reserve(rows);
  be.upload(ex.input(0), x.data(), x.size() * sizeof(float));
  std::vector<float> params = g->initial_params();
  for (const Graph::Param& p : g->params())
    if (p.name == "kernel")
      for (int k = 0; k < 3; ++k) params[static_cast<size_t>(p.offset + 4 * k)] = 1.0f;
  // The state variables' values, in weights() order, at the graph's offsets.
  std::vector<float> state = g->initial_state();
  for (size_t k = 0; state_values != nullptr && k < state_values->size(); ++k)
    std::copy((*state_values)[k].begin(), (*state_values)[k].end(),
              state.begin() + g->states()[k].offset);
  ex.forward(test_pass(rows, 0, params.data(), state.data()));
  Pass p;
  p.y.assign(ex.output(0), ex.output(0) + x.size());
  be.fill(static_cast<int64_t>(x.size()), ex.output_grad(0), 1.0f);
  std::vector<float> grads(params.size());
  ex.backward(test_pass(rows, 0, params.data(), state.data()), grads.data());
  const Graph::Param& bias = g->params()[1];
  p.dx.assign(grads.begin() + bias.offset, grads.begin() + bias.offset + 3);
  return p;
}

TEST(NormalizationLayer, NormalizesAndInvertsWithGivenOrStateValues) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  // Given per-feature values: no weights, y = (x - m) / sqrt(v).
  auto given = [](bool invert) {
    return make_layer("Normalization",
                      Json{{"name", "n"},
                           {"mean", Json::array({1.0, 2.0, 3.0})},
                           {"variance", Json::array({4.0, 1.0, 0.0})},
                           {"invert", invert}},
                      0);
  };
  EXPECT_TRUE(given(false)->weights({Shape{3}}).empty());
  const Pass p = run_layer(given(false), x);
  const std::vector<double> want = {0.0, 0.0, 0.0, 1.5, 3.0, 3.0 / 1e-7};
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(p.y[i], want[i], 1e-6 * (1 + want[i]));
  const Pass q = run_layer(given(true), x);
  const std::vector<double> inv = {3.0, 4.0, 3.0, 9.0, 7.0, 3.0 + 6e-7};
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(q.y[i], inv[i], 1e-6 * (1 + inv[i]));
  // Two rows of dy = 1: dx summed = 2 / s, or 2 * s when inverted.
  EXPECT_NEAR(p.dx[0], 2 * 0.5, 1e-6);
  EXPECT_NEAR(p.dx[1], 2 * 1.0, 1e-6);
  EXPECT_NEAR(q.dx[0], 2 * 2.0, 1e-6);
  // Adapted: mean, variance, count in the state buffer (Keras' weights).
  auto adapted = make_layer("Normalization", Json{{"name", "n"}}, 0);
  const auto w = adapted->weights({Shape{3}});
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].name, "mean");
  EXPECT_EQ(w[1].name, "variance");
  EXPECT_EQ(w[2].name, "count");
  EXPECT_EQ(w[2].shape.rank(), 0);
  EXPECT_FALSE(w[0].trainable || w[1].trainable || w[2].trainable);
  const std::vector<std::vector<float>> state = {{1, 2, 3}, {4, 1, 0}, {99}};
  const Pass s = run_layer(std::move(adapted), x, &state);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(s.y[i], want[i], 1e-6 * (1 + want[i]));
  // axis = null: one scalar mean and variance.
  auto scalar = make_layer(
      "Normalization", Json{{"name", "n"}, {"axis", nullptr}, {"mean", 2.0}, {"variance", 4.0}}, 0);
  const Pass t = run_layer(std::move(scalar), x);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(t.y[i], (x[i] - 2.0) / 2.0, 1e-6);
  EXPECT_EQ(make_layer("Normalization", Json{{"name", "n"}}, 0)->config()["axis"],
            Json::array({-1}));
}

TEST(RescalingLayer, ScalesShiftsAndPassesTheGradient) {
  const std::vector<float> x = {0, 51, 255, -2, 1, 2};
  const Pass p = run_layer(
      make_layer("Rescaling", Json{{"name", "r"}, {"scale", 1.0 / 127.5}, {"offset", -1}}, 0), x);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(p.y[i], x[i] / 127.5 - 1.0, 1e-6);
  }
  for (float d : p.dx) EXPECT_NEAR(d, 2.0 / 127.5, 1e-7);
  EXPECT_THROW(make_layer("Rescaling", Json{{"name", "r"}}, 0), Error);
  EXPECT_THROW(make_layer("Rescaling", Json{{"name", "r"}, {"scale", Json::array({1.0, 2.0})}}, 0),
               Error);
}

}  // namespace
}  // namespace mr
