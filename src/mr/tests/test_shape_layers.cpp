// Reshaping and merging layers run directly on the CPU backend: forward
// against hand-computed or independently indexed references, gradients
// through the adjoint identity (linear layers) or central differences
// (Multiply, Maximum, Minimum, Dot), configs as Keras writes them, shape
// errors, and rows = 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "tests/layer_harness.h"

namespace mr {
namespace {

Json cfg(Json extra) {
  Json c{{"name", "l"}};
  for (auto it = extra.begin(); it != extra.end(); ++it) c[it.key()] = it.value();
  return c;
}

std::vector<float> iota(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  return v;
}

TEST(ShapeLayers, ReshapeInfersTheMinusOneAndCopies) {
  LayerRun run("Reshape", cfg({{"target_shape", {-1, 3}}}), {Shape{2, 3, 2}});
  EXPECT_EQ(run.out_shape(), (Shape{4, 3}));
  const Vec x = iota(24);
  EXPECT_EQ(run.forward({x}, 2), x);
  expect_adjoint(run, 3);
  EXPECT_EQ(run.layer().config()["target_shape"], Json({-1, 3}));
  EXPECT_THROW(LayerRun("Reshape", cfg({{"target_shape", {5, -1}}}), {Shape{2, 3}}), Error);
  EXPECT_THROW(LayerRun("Reshape", cfg({{"target_shape", {-1, -1}}}), {Shape{6}}), Error);
}

TEST(ShapeLayers, PermuteMatchesAnIndexReference) {
  // Per-sample (2, 3, 4) with dims (3, 1, 2): out[k][i][j] = in[i][j][k].
  LayerRun run("Permute", cfg({{"dims", {3, 1, 2}}}), {Shape{2, 3, 4}});
  EXPECT_EQ(run.out_shape(), (Shape{4, 2, 3}));
  const int64_t rows = 2;
  const Vec x = iota(rows * 24);
  const Vec y = run.forward({x}, rows);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k)
          EXPECT_EQ(y[static_cast<size_t>(r * 24 + k * 6 + i * 3 + j)],
                    x[static_cast<size_t>(r * 24 + i * 12 + j * 4 + k)]);
  expect_adjoint(run, 3);
  EXPECT_THROW(LayerRun("Permute", cfg({{"dims", {1, 1}}}), {Shape{2, 2}}), Error);
  EXPECT_THROW(LayerRun("Permute", cfg({{"dims", {2, 1}}}), {Shape{2, 2, 2}}), Error);
}

TEST(ShapeLayers, RepeatVectorRepeatsAndSumsBack) {
  LayerRun run("RepeatVector", cfg({{"n", 3}}), {Shape{2}});
  EXPECT_EQ(run.out_shape(), (Shape{3, 2}));
  EXPECT_EQ(run.forward({{1, 2, 3, 4}}, 2), (Vec{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
  const auto g = run.backward({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  EXPECT_EQ(g[0], (Vec{9, 12, 27, 30}));
  expect_adjoint(run, 4);
}

TEST(ShapeLayers, ZeroPadding1DAnd2D) {
  LayerRun p1("ZeroPadding1D", cfg({{"padding", {1, 2}}}), {Shape{2, 1}});
  EXPECT_EQ(p1.out_shape(), (Shape{5, 1}));
  EXPECT_EQ(p1.forward({{7, 8}}, 1), (Vec{0, 7, 8, 0, 0}));
  expect_adjoint(p1, 3);
  EXPECT_EQ(p1.layer().config()["padding"], Json({1, 2}));
  EXPECT_EQ(p1.layer().config()["data_format"], "channels_last");

  // 2x2 image, 1 channel, padding ((1, 0), (0, 1)).
  LayerRun p2("ZeroPadding2D", cfg({{"padding", {{1, 0}, {0, 1}}}}), {Shape{2, 2, 1}});
  EXPECT_EQ(p2.out_shape(), (Shape{3, 3, 1}));
  EXPECT_EQ(p2.forward({{1, 2, 3, 4}}, 1), (Vec{0, 0, 0, 1, 2, 0, 3, 4, 0}));
  expect_adjoint(p2, 2);
  LayerRun p3("ZeroPadding2D", cfg({{"padding", 2}}), {Shape{3, 2, 2}});
  EXPECT_EQ(p3.out_shape(), (Shape{7, 6, 2}));
  EXPECT_EQ(p3.layer().config()["padding"], Json({{2, 2}, {2, 2}}));
  expect_adjoint(p3, 2);
  EXPECT_THROW(
      LayerRun("ZeroPadding2D", cfg({{"data_format", "channels_first"}}), {Shape{2, 2, 1}}), Error);
}

TEST(ShapeLayers, Cropping1DAnd2D) {
  LayerRun c1("Cropping1D", cfg({{"cropping", {1, 1}}}), {Shape{4, 2}});
  EXPECT_EQ(c1.out_shape(), (Shape{2, 2}));
  EXPECT_EQ(c1.forward({iota(8)}, 1), (Vec{2, 3, 4, 5}));
  expect_adjoint(c1, 3);
  EXPECT_FALSE(c1.layer().config().contains("data_format"));
  LayerRun c2("Cropping2D", cfg({{"cropping", {{1, 0}, {0, 1}}}}), {Shape{3, 3, 1}});
  EXPECT_EQ(c2.out_shape(), (Shape{2, 2, 1}));
  EXPECT_EQ(c2.forward({iota(9)}, 1), (Vec{3, 4, 6, 7}));
  expect_adjoint(c2, 3);
  EXPECT_THROW(LayerRun("Cropping1D", cfg({{"cropping", {2, 2}}}), {Shape{4, 2}}), Error);
}

TEST(ShapeLayers, UpSampling1DAnd2D) {
  LayerRun u1("UpSampling1D", cfg({{"size", 3}}), {Shape{2, 1}});
  EXPECT_EQ(u1.out_shape(), (Shape{6, 1}));
  EXPECT_EQ(u1.forward({{1, 2}}, 1), (Vec{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(u1.layer().config()["size"], 3);
  expect_adjoint(u1, 3);
  // 2x2 image, 2 channels, size (2, 3): out[i][j][c] = in[i / 2][j / 3][c].
  LayerRun u2("UpSampling2D", cfg({{"size", {2, 3}}}), {Shape{2, 2, 2}});
  EXPECT_EQ(u2.out_shape(), (Shape{4, 6, 2}));
  const Vec x = iota(16);
  const Vec y = u2.forward({x}, 2);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 6; ++j)
        for (int64_t c = 0; c < 2; ++c)
          EXPECT_EQ(y[static_cast<size_t>(r * 48 + i * 12 + j * 2 + c)],
                    x[static_cast<size_t>(r * 8 + (i / 2) * 4 + (j / 3) * 2 + c)]);
  const auto g = u2.backward(Vec(96, 1.0f));
  EXPECT_EQ(g[0], Vec(16, 6.0f));
  expect_adjoint(u2, 3);
  EXPECT_THROW(LayerRun("UpSampling2D", cfg({{"interpolation", "bilinear"}}), {Shape{2, 2, 1}}),
               Error);
}

TEST(MergeLayers, ConcatenateAlongAnyAxis) {
  LayerRun last("Concatenate", cfg({}), {Shape{2, 1}, Shape{2, 2}});
  EXPECT_EQ(last.out_shape(), (Shape{2, 3}));
  EXPECT_EQ(last.forward({{1, 2}, {3, 4, 5, 6}}, 1), (Vec{1, 3, 4, 2, 5, 6}));
  expect_adjoint(last, 3);
  LayerRun first("Concatenate", cfg({{"axis", 1}}), {Shape{1, 2}, Shape{2, 2}, Shape{1, 2}});
  EXPECT_EQ(first.out_shape(), (Shape{4, 2}));
  EXPECT_EQ(first.forward({{1, 2}, {3, 4, 5, 6}, {7, 8}}, 1), (Vec{1, 2, 3, 4, 5, 6, 7, 8}));
  expect_adjoint(first, 3);
  EXPECT_EQ(first.layer().config()["axis"], 1);
  try {
    LayerRun("Concatenate", cfg({}), {Shape{2, 1}, Shape{3, 2}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::shape);
    EXPECT_NE(std::string(e.what()).find("(None, 3, 2)"), std::string::npos) << e.what();
  }
}

TEST(MergeLayers, SubtractAverageMultiply) {
  LayerRun sub("Subtract", cfg({}), {Shape{2}, Shape{2}});
  EXPECT_EQ(sub.forward({{5, 1}, {2, 3}}, 1), (Vec{3, -2}));
  expect_adjoint(sub, 3);
  EXPECT_THROW(LayerRun("Subtract", cfg({}), {Shape{2}, Shape{2}, Shape{2}}), Error);
  LayerRun avg("Average", cfg({}), {Shape{2}, Shape{2}, Shape{2}});
  EXPECT_EQ(avg.forward({{3, 0}, {6, 3}, {0, 3}}, 1), (Vec{3, 2}));
  expect_adjoint(avg, 3);
  LayerRun mul("Multiply", cfg({}), {Shape{3}, Shape{3}, Shape{3}});
  EXPECT_EQ(mul.forward({{1, 2, 3}, {2, 2, 2}, {-1, 0, 0.5f}}, 1), (Vec{-2, 0, 3}));
  expect_fd(mul, 2, mul.inputs(2, 0.2), 1e-2, 2e-3);
  EXPECT_THROW(LayerRun("Multiply", cfg({}), {Shape{3}, Shape{2}}), Error);
}

TEST(MergeLayers, MaximumAndMinimumGiveTiesToTheFirstInput) {
  LayerRun mx("Maximum", cfg({}), {Shape{3}, Shape{3}, Shape{3}});
  EXPECT_EQ(mx.forward({{1, 5, 2}, {4, 5, 2}, {0, 1, 2}}, 1), (Vec{4, 5, 2}));
  const auto g = mx.backward({10, 20, 30});
  EXPECT_EQ(g[0], (Vec{0, 20, 30}));
  EXPECT_EQ(g[1], (Vec{10, 0, 0}));
  EXPECT_EQ(g[2], (Vec{0, 0, 0}));
  expect_fd(mx, 3, mx.inputs(3, 0.4), 1e-3, 2e-3);
  LayerRun mn("Minimum", cfg({}), {Shape{2}, Shape{2}});
  EXPECT_EQ(mn.forward({{1, 3}, {2, 3}}, 1), (Vec{1, 3}));
  EXPECT_EQ(mn.backward({1, 1}), (std::vector<Vec>{{1, 1}, {0, 0}}));
  expect_fd(mn, 3, mn.inputs(3, 0.9), 1e-3, 2e-3);
}

TEST(MergeLayers, DotWithAndWithoutNormalize) {
  LayerRun d("Dot", cfg({{"axes", -1}}), {Shape{3}, Shape{3}});
  EXPECT_EQ(d.out_shape(), (Shape{1}));
  EXPECT_EQ(d.forward({{1, 2, 3, 0, 1, 0}, {4, 5, 6, 2, 2, 2}}, 2), (Vec{32, 2}));
  expect_fd(d, 3, d.inputs(3, 0.1), 1e-2, 2e-3);
  LayerRun n("Dot", cfg({{"axes", 1}, {"normalize", true}}), {Shape{3}, Shape{3}});
  const Vec y = n.forward({{1, 2, 2, 3, 0, 0}, {2, 0, 0, 0, 0, 0}}, 2);
  EXPECT_NEAR(y[0], 1.0 / 3.0, 1e-6);
  EXPECT_NEAR(y[1], 0.0, 1e-6);  // the zero vector stays 0 (the norm is clamped at 1e-6)
  expect_fd(n, 3, n.inputs(3, 0.1), 1e-3, 5e-3);
  EXPECT_EQ(n.layer().config()["normalize"], true);
  EXPECT_THROW(LayerRun("Dot", cfg({{"axes", 1}}), {Shape{3}, Shape{4}}), Error);
  EXPECT_THROW(LayerRun("Dot", cfg({{"axes", 1}}), {Shape{3}, Shape{2, 3}}), Error);
}

TEST(MergeLayers, DotOfMatricesIsABatchedMatrixProduct) {
  // x (2, 3), y (3, 2) per sample, axes (2, 1): out = x y.
  LayerRun d("Dot", cfg({{"axes", {2, 1}}}), {Shape{2, 3}, Shape{3, 2}});
  EXPECT_EQ(d.out_shape(), (Shape{2, 2}));
  const Vec y = d.forward({{1, 2, 3, 4, 5, 6}, {1, 0, 0, 1, 1, 1}}, 1);
  EXPECT_EQ(y, (Vec{4, 5, 10, 11}));
  expect_fd(d, 3, d.inputs(3, 0.2), 1e-2, 2e-3);
  // Every pair of contracted axes (Keras' numbering, batch axis 0): shapes
  // (batch, 3, 4) and (batch, 4, 3) / (batch, 3, 4) joined on length 3 or 4.
  struct A {
    int a0, a1;
    Shape x, y, out;
  };
  for (const A& c : {A{1, 1, Shape{3, 4}, Shape{3, 2}, Shape{4, 2}},
                     A{1, 2, Shape{3, 4}, Shape{2, 3}, Shape{4, 2}},
                     A{2, 1, Shape{3, 4}, Shape{4, 2}, Shape{3, 2}},
                     A{2, 2, Shape{3, 4}, Shape{2, 4}, Shape{3, 2}}}) {
    LayerRun run("Dot", cfg({{"axes", {c.a0, c.a1}}}), {c.x, c.y});
    EXPECT_EQ(run.out_shape(), c.out) << c.a0 << c.a1;
    // Forward against a direct triple loop.
    const std::vector<Vec> in = run.inputs(2, 0.7);
    const Vec out = run.forward(in, 2);
    const int64_t f0 = c.out[0], f1 = c.out[1], k = c.a0 == 1 ? c.x[0] : c.x[1];
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t i = 0; i < f0; ++i)
        for (int64_t j = 0; j < f1; ++j) {
          double s = 0;
          for (int64_t t = 0; t < k; ++t) {
            const int64_t xi = c.a0 == 1 ? t * c.x[1] + i : i * c.x[1] + t;
            const int64_t yi = c.a1 == 1 ? t * c.y[1] + j : j * c.y[1] + t;
            s += double{in[0][static_cast<size_t>(r * c.x.numel() + xi)]} *
                 in[1][static_cast<size_t>(r * c.y.numel() + yi)];
          }
          EXPECT_NEAR(out[static_cast<size_t>(r * f0 * f1 + i * f1 + j)], s, 1e-5);
        }
    expect_fd(run, 2, run.inputs(2, 0.3), 1e-2, 2e-3);
  }
  LayerRun n("Dot", cfg({{"axes", -1}, {"normalize", true}}), {Shape{2, 3}, Shape{4, 3}});
  EXPECT_EQ(n.out_shape(), (Shape{2, 4}));
  expect_fd(n, 2, n.inputs(2, 0.5), 1e-3, 5e-3);
  EXPECT_THROW(LayerRun("Dot", cfg({{"axes", 1}, {"normalize", true}}), {Shape{3, 2}, Shape{3, 2}}),
               Error);
  EXPECT_THROW(LayerRun("Dot", cfg({{"axes", {1, 2}}}), {Shape{3, 2}, Shape{3, 2}}), Error);
}

TEST(ShapeLayers, ZeroRowsTouchNothing) {
  struct C {
    const char* cls;
    Json config;
    std::vector<Shape> in;
  };
  const std::vector<C> cases = {
      {"Reshape", cfg({{"target_shape", {6}}}), {Shape{2, 3}}},
      {"Permute", cfg({{"dims", {2, 1}}}), {Shape{2, 3}}},
      {"RepeatVector", cfg({{"n", 2}}), {Shape{3}}},
      {"ZeroPadding2D", cfg({}), {Shape{2, 2, 1}}},
      {"Cropping2D", cfg({{"cropping", 1}}), {Shape{3, 3, 1}}},
      {"UpSampling2D", cfg({}), {Shape{2, 2, 1}}},
      {"Concatenate", cfg({}), {Shape{2}, Shape{3}}},
      {"Maximum", cfg({}), {Shape{2}, Shape{2}}},
      {"Minimum", cfg({}), {Shape{2}, Shape{2}, Shape{2}}},
      {"Subtract", cfg({}), {Shape{2}, Shape{2}}},
      {"Multiply", cfg({}), {Shape{2}, Shape{2}}},
      {"Average", cfg({}), {Shape{2}, Shape{2}}},
      {"ZeroPadding1D", cfg({}), {Shape{2, 1}}},
      {"Cropping1D", cfg({}), {Shape{3, 1}}},
      {"UpSampling1D", cfg({}), {Shape{2, 1}}},
      {"Dot", cfg({{"axes", {1, 1}}}), {Shape{2, 3}, Shape{2, 4}}},
      {"ReLU", cfg({{"max_value", 6.0}}), {Shape{2}}},
      {"ELU", cfg({}), {Shape{2}}},
      {"LeakyReLU", cfg({}), {Shape{2}}},
      {"Softmax", cfg({}), {Shape{2}}},
      {"Dot", cfg({{"axes", 1}, {"normalize", true}}), {Shape{2}, Shape{2}}},
      {"Dot", cfg({{"axes", -1}, {"normalize", true}}), {Shape{2, 2}, Shape{3, 2}}},
  };
  for (const C& c : cases) {
    LayerRun run(c.cls, c.config, c.in);
    std::vector<Vec> x;
    for (size_t k = 0; k < c.in.size(); ++k) x.emplace_back();
    EXPECT_TRUE(run.forward(x, 0).empty()) << c.cls;
    for (const Vec& d : run.backward({})) EXPECT_TRUE(d.empty()) << c.cls;
  }
}

}  // namespace
}  // namespace mr
