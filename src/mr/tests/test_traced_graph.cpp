// TracedGraph (nn/traced_graph.h) on the CPU: graphs built from their JSON,
// forward against double-precision hand computations, backward against
// double-precision analytic gradients and central finite differences of the
// graph's own f32 forward (step 1e-2 on sum(out * dout) accumulated in
// double: 3e-3 relative + 3e-3 absolute), shape and parse errors, thread-count
// independence and no allocation inside forward / backward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/json.h"
#include "nn/traced_graph.h"
#include "tests/test_util.h"
#include "tests/traced_graph_run.h"

namespace mr {
namespace {

using testgraph::error_of;
using testgraph::expect_fd;
using testgraph::graph;
using testgraph::GraphRun;
using testgraph::objective;
using testgraph::Vec;

constexpr int64_t kRows = 5;

TEST(TracedGraph, MeanSquaredErrorPerSample) {
  const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 3]}, {"shape": [null, 3]}],
    "nodes": [{"op": "subtract", "in": [["input", 0], ["input", 1]]},
              {"op": "square", "in": [["node", 0]]},
              {"op": "mean", "in": [["node", 1]], "attrs": {"axis": -1, "keepdims": false}}],
    "outputs": [["node", 2]]})");
  ASSERT_EQ(g.output_shapes()[0].dims, (std::vector<int64_t>{-1}));
  CpuBackend be(0, 1);
  GraphRun r(be, g, kRows);
  const Vec yt = uniform_floats(kRows * 3, 1), yp = uniform_floats(kRows * 3, 2);
  const Vec dout = uniform_floats(kRows, 3);
  r.set(r.in[0], yt);
  r.set(r.in[1], yp);
  r.set(r.dout[0], dout);
  r.forward();
  const Vec out = r.output();
  for (int64_t b = 0; b < kRows; ++b) {
    double s = 0.0;
    for (int j = 0; j < 3; ++j) s += std::pow(double(yt[b * 3 + j]) - yp[b * 3 + j], 2);
    EXPECT_NEAR(out[b], s / 3.0, 1e-6) << b;
  }
  r.backward();
  const Vec dyp = r.get(r.din[1], kRows * 3);
  for (int64_t i = 0; i < kRows * 3; ++i)
    EXPECT_NEAR(dyp[i], -2.0 * (double(yt[i]) - yp[i]) / 3.0 * dout[i / 3], 1e-6) << i;
  expect_fd(r, r.in[1], yp, dyp, {dout}, "d y_pred");
}

TEST(TracedGraph, SoftmaxCrossEntropyFromLogits) {
  const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 4]}, {"shape": [null, 4]}],
    "nodes": [{"op": "log_softmax", "in": [["input", 1]], "attrs": {"axis": -1}},
              {"op": "multiply", "in": [["input", 0], ["node", 0]]},
              {"op": "sum", "in": [["node", 1]], "attrs": {"axis": -1}},
              {"op": "negative", "in": [["node", 2]]}],
    "outputs": [["node", 3]]})");
  CpuBackend be(0, 1);
  GraphRun r(be, g, kRows);
  Vec onehot(kRows * 4, 0.0f);
  for (int64_t b = 0; b < kRows; ++b) onehot[b * 4 + (b * 3) % 4] = 1.0f;
  const Vec logits = uniform_floats(kRows * 4, 4, 0, -3.0f, 3.0f);
  const Vec dout = uniform_floats(kRows, 5);
  r.set(r.in[0], onehot);
  r.set(r.in[1], logits);
  r.set(r.dout[0], dout);
  r.forward();
  const Vec out = r.output();
  r.backward();
  const Vec dl = r.get(r.din[1], kRows * 4);
  for (int64_t b = 0; b < kRows; ++b) {
    double m = -1e30, s = 0.0;
    for (int j = 0; j < 4; ++j) m = std::max(m, double(logits[b * 4 + j]));
    for (int j = 0; j < 4; ++j) s += std::exp(logits[b * 4 + j] - m);
    const double lse = m + std::log(s);
    double ce = 0.0;
    for (int j = 0; j < 4; ++j) ce -= onehot[b * 4 + j] * (logits[b * 4 + j] - lse);
    EXPECT_NEAR(out[b], ce, 2e-6 * (1 + ce)) << b;
    for (int j = 0; j < 4; ++j)
      EXPECT_NEAR(dl[b * 4 + j], (std::exp(logits[b * 4 + j] - lse) - onehot[b * 4 + j]) * dout[b],
                  1e-6);
  }
  expect_fd(r, r.in[1], logits, dl, {dout}, "d logits");
}

const char* kDense = R"({"inputs": [{"shape": [null, 4]}],
    "weights": [{"name": "w", "shape": [4, 3]}, {"name": "b", "shape": [3]}],
    "nodes": [{"op": "matmul", "in": [["input", 0], ["weight", 0]], "line": "R/x.R#3"},
              {"op": "add", "in": [["node", 0], ["weight", 1]]},
              {"op": "relu", "in": [["node", 1]]}],
    "outputs": [["node", 2]]})";

TEST(TracedGraph, DenseLayerWithWeights) {
  const TracedGraph g = graph(kDense);
  CpuBackend be(0, 1);
  GraphRun r(be, g, kRows);
  const Vec x = uniform_floats(kRows * 4, 6), w = uniform_floats(12, 7),
            b = uniform_floats(3, 8, 0, -0.3f, 0.3f);
  const Vec dout = uniform_floats(kRows * 3, 9);
  r.set(r.in[0], x);
  r.set(r.w[0], w);
  r.set(r.w[1], b);
  r.set(r.dout[0], dout);
  r.forward();
  const Vec out = r.output();
  std::vector<double> z(kRows * 3);
  for (int64_t i = 0; i < kRows; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = b[j];
      for (int k = 0; k < 4; ++k) s += double(x[i * 4 + k]) * w[k * 3 + j];
      z[i * 3 + j] = s;
      ASSERT_GT(std::fabs(s), 2e-2) << "test data too close to relu's kink";
      EXPECT_NEAR(out[i * 3 + j], std::max(s, 0.0), 1e-6);
    }
  r.backward();
  const Vec dx = r.get(r.din[0], kRows * 4), dw = r.get(r.dw[0], 12), db = r.get(r.dw[1], 3);
  for (int j = 0; j < 3; ++j) {
    double s = 0.0;
    for (int64_t i = 0; i < kRows; ++i) s += z[i * 3 + j] > 0 ? dout[i * 3 + j] : 0.0;
    EXPECT_NEAR(db[j], s, 1e-6);
  }
  expect_fd(r, r.in[0], x, dx, {dout}, "dx");
  expect_fd(r, r.w[0], w, dw, {dout}, "dW");
  expect_fd(r, r.w[1], b, db, {dout}, "db");
}

TEST(TracedGraph, NodeUsedTwiceAccumulates) {
  const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 3]}],
    "nodes": [{"op": "multiply", "in": [["input", 0], ["input", 0]]},
              {"op": "add", "in": [["node", 0], ["input", 0]]}],
    "outputs": [["node", 1]]})");
  CpuBackend be(0, 1);
  GraphRun r(be, g, kRows);
  const Vec x = uniform_floats(kRows * 3, 10), dout = uniform_floats(kRows * 3, 11);
  r.set(r.in[0], x);
  r.set(r.dout[0], dout);
  r.forward();
  r.backward();
  const Vec out = r.output(), dx = r.get(r.din[0], kRows * 3);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_FLOAT_EQ(out[i], x[i] * x[i] + x[i]);
    EXPECT_NEAR(dx[i], (2.0 * x[i] + 1.0) * dout[i], 1e-6);
  }
}

TEST(TracedGraph, BroadcastsConstantsAndWeights) {
  // x * 2 + c[1, 3] + w[3]
  const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 3]}],
    "weights": [{"name": "w", "shape": [3]}],
    "constants": [{"shape": [], "values": [2.0]}, {"shape": [1, 3], "values": [0.5, -1, 4]}],
    "nodes": [{"op": "multiply", "in": [["input", 0], ["constant", 0]]},
              {"op": "add", "in": [["node", 0], ["constant", 1]]},
              {"op": "add", "in": [["node", 1], ["weight", 0]]}],
    "outputs": [["node", 2]]})");
  CpuBackend be(0, 1);
  GraphRun r(be, g, kRows);
  const Vec x = uniform_floats(kRows * 3, 12), w = uniform_floats(3, 13),
            dout = uniform_floats(kRows * 3, 14);
  const float c[3] = {0.5f, -1.0f, 4.0f};
  r.set(r.in[0], x);
  r.set(r.w[0], w);
  r.set(r.dout[0], dout);
  r.forward();
  r.backward();
  const Vec out = r.output(), dx = r.get(r.din[0], kRows * 3), dw = r.get(r.dw[0], 3);
  for (int64_t i = 0; i < kRows; ++i)
    for (int j = 0; j < 3; ++j) {
      EXPECT_NEAR(out[i * 3 + j], 2.0 * x[i * 3 + j] + c[j] + w[j], 1e-6);
      EXPECT_FLOAT_EQ(dx[i * 3 + j], 2.0f * dout[i * 3 + j]);
    }
  for (int j = 0; j < 3; ++j) {
    double s = 0.0;
    for (int64_t i = 0; i < kRows; ++i) s += dout[i * 3 + j];
    EXPECT_NEAR(dw[j], s, 1e-6);
  }
}

TEST(TracedGraph, CrossBroadcastGradientsSumOverTheBatchAxis) {
  // a[B, 1, 3] * b[B, 2, 1] + w[2, 1] - where(c[B, 2, 3], a, w): every operand broadcast
  // along some axis; w's gradient sums over the rows.
  const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 1, 3]}, {"shape": [null, 2, 1]},
                                             {"shape": [null, 2, 3]}],
    "weights": [{"name": "w", "shape": [2, 1]}],
    "nodes": [{"op": "multiply", "in": [["input", 0], ["input", 1]]},
              {"op": "add", "in": [["node", 0], ["weight", 0]]},
              {"op": "where", "in": [["input", 2], ["input", 0], ["weight", 0]]},
              {"op": "subtract", "in": [["node", 1], ["node", 2]]}],
    "outputs": [["node", 3]]})");
  EXPECT_EQ(g.output_shapes()[0].dims, (std::vector<int64_t>{-1, 2, 3}));
  CpuBackend be(0, 1);
  GraphRun r(be, g, kRows);
  const Vec a = uniform_floats(kRows * 3, 40), b = uniform_floats(kRows * 2, 41),
            w = uniform_floats(2, 42);
  Vec c = uniform_floats(kRows * 6, 43);
  for (float& v : c) v = v > 0 ? 1.0f : 0.0f;
  const Vec dout = uniform_floats(kRows * 6, 44);
  r.set(r.in[0], a);
  r.set(r.in[1], b);
  r.set(r.in[2], c);
  r.set(r.w[0], w);
  r.set(r.dout[0], dout);
  r.forward();
  const Vec out = r.output();
  for (int64_t n = 0; n < kRows; ++n)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) {
        const double av = a[n * 3 + j], wv = w[i];
        const double want = av * b[n * 2 + i] + wv - (c[n * 6 + i * 3 + j] != 0 ? av : wv);
        EXPECT_NEAR(out[n * 6 + i * 3 + j], want, 1e-6);
      }
  r.backward();
  const Vec da = r.get(r.din[0], kRows * 3), db = r.get(r.din[1], kRows * 2),
            dw = r.get(r.dw[0], 2);
  expect_fd(r, r.in[0], a, da, {dout}, "da");
  expect_fd(r, r.in[1], b, db, {dout}, "db");
  expect_fd(r, r.w[0], w, dw, {dout}, "dw");
}

TEST(TracedGraph, ViewsAndTransposeRoundTrip) {
  // [B,2,3] -> [B,6] -> [B,1,6] -> [B,6] -> [B,3,2] -> transpose [B,2,3] -> * c
  const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 2, 3]}],
    "constants": [{"shape": [2, 3], "values": [1, 2, 3, 4, 5, 6]}],
    "nodes": [{"op": "reshape", "in": [["input", 0]], "attrs": {"shape": [-1]}},
              {"op": "expand_dims", "in": [["node", 0]], "attrs": {"axis": 1}},
              {"op": "squeeze", "in": [["node", 1]], "attrs": {"axis": 1}},
              {"op": "reshape", "in": [["node", 2]], "attrs": {"shape": [3, 2]}},
              {"op": "transpose", "in": [["node", 3]], "attrs": {"axes": [0, 2, 1]}},
              {"op": "multiply", "in": [["node", 4], ["constant", 0]]}],
    "outputs": [["node", 5], ["node", 1]]})");
  const auto shapes = g.output_shapes();
  EXPECT_EQ(shapes[0].dims, (std::vector<int64_t>{-1, 2, 3}));
  EXPECT_EQ(shapes[1].dims, (std::vector<int64_t>{-1, 1, 6}));
  CpuBackend be(0, 1);
  GraphRun r(be, g, kRows);
  const Vec x = uniform_floats(kRows * 6, 15), d0 = uniform_floats(kRows * 6, 16),
            d1 = uniform_floats(kRows * 6, 17);
  r.set(r.in[0], x);
  r.set(r.dout[0], d0);
  r.set(r.dout[1], d1);
  r.forward();
  r.backward();
  const Vec out = r.output(0), view = r.output(1), dx = r.get(r.din[0], kRows * 6);
  EXPECT_EQ(view, x);
  for (int64_t b = 0; b < kRows; ++b)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) {
        // node 3 is flat viewed as [3, 2]; out[b, i, j] = flat[b, j * 2 + i] * c[i, j]
        const int64_t f = b * 6 + j * 2 + i;
        const float c = static_cast<float>(i * 3 + j + 1);
        EXPECT_FLOAT_EQ(out[b * 6 + i * 3 + j], x[f] * c);
        EXPECT_NEAR(dx[f], double(d0[b * 6 + i * 3 + j]) * c + d1[f], 1e-6);
      }
}

TEST(TracedGraph, ReductionsOverAxisListsAndTheBatchAxis) {
  const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 2, 3, 4]}],
    "nodes": [{"op": "sum", "in": [["input", 0]], "attrs": {"axis": [1, 2], "keepdims": true}},
              {"op": "max", "in": [["input", 0]], "attrs": {"axis": -1}},
              {"op": "mean", "in": [["input", 0]], "attrs": {"axis": null}},
              {"op": "mean", "in": [["input", 0]], "attrs": {"axis": 0}},
              {"op": "softmax", "in": [["input", 0]], "attrs": {"axis": 0}},
              {"op": "sum", "in": [["input", 0]], "attrs": {"axis": [1, 3]}},
              {"op": "max", "in": [["input", 0]], "attrs": {"axis": [0, 2], "keepdims": true}}],
    "outputs": [["node", 0], ["node", 1], ["node", 2], ["node", 3], ["node", 4], ["node", 5],
                ["node", 6]]})");
  const auto s = g.output_shapes();
  EXPECT_EQ(s[0].dims, (std::vector<int64_t>{-1, 1, 1, 4}));
  EXPECT_EQ(s[1].dims, (std::vector<int64_t>{-1, 2, 3}));
  EXPECT_TRUE(s[2].dims.empty());
  EXPECT_FALSE(s[2].batched);
  EXPECT_EQ(s[3].dims, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_FALSE(s[3].batched);
  EXPECT_TRUE(s[4].batched);
  EXPECT_EQ(s[5].dims, (std::vector<int64_t>{-1, 3}));
  EXPECT_EQ(s[6].dims, (std::vector<int64_t>{1, 2, 1, 4}));
  EXPECT_FALSE(s[6].batched);
  CpuBackend be(0, 1);
  GraphRun r(be, g, kRows);
  // Distinct values 0.05 apart: max's finite differences (step 1e-2) never
  // cross a tie.
  Vec x(kRows * 24);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>((i * 37) % x.size()) * 0.05f - 3.0f;
  std::vector<Vec> douts;
  for (int i = 0; i < 7; ++i) {
    douts.push_back(uniform_floats(static_cast<size_t>(g.output_floats(i, kRows)), 19, i));
    r.set(r.dout[static_cast<size_t>(i)], douts.back());
  }
  r.set(r.in[0], x);
  r.forward();
  const Vec o0 = r.output(0), o1 = r.output(1), o2 = r.output(2), o3 = r.output(3);
  double all = 0.0;
  for (int64_t b = 0; b < kRows; ++b)
    for (int k = 0; k < 4; ++k) {
      double s01 = 0.0;
      for (int ij = 0; ij < 6; ++ij) s01 += x[b * 24 + ij * 4 + k];
      EXPECT_NEAR(o0[b * 4 + k], s01, 1e-5);
    }
  for (int64_t b = 0; b < kRows; ++b)
    for (int ij = 0; ij < 6; ++ij) {
      float m = -1e30f;
      for (int k = 0; k < 4; ++k) m = std::max(m, x[b * 24 + ij * 4 + k]);
      EXPECT_EQ(o1[b * 6 + ij], m);
    }
  for (float v : x) all += v;
  EXPECT_NEAR(o2[0], all / (kRows * 24), 1e-6);
  for (int e = 0; e < 24; ++e) {
    double s2 = 0.0;
    for (int64_t b = 0; b < kRows; ++b) s2 += x[b * 24 + e];
    EXPECT_NEAR(o3[e], s2 / kRows, 1e-6);
  }
  const Vec o5 = r.output(5), o6 = r.output(6);
  for (int64_t b = 0; b < kRows; ++b)
    for (int j = 0; j < 3; ++j) {
      double s13 = 0.0;
      for (int i = 0; i < 2; ++i)
        for (int k = 0; k < 4; ++k) s13 += x[b * 24 + i * 12 + j * 4 + k];
      EXPECT_NEAR(o5[b * 3 + j], s13, 1e-5);
    }
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) {
      float m = -1e30f;
      for (int64_t b = 0; b < kRows; ++b)
        for (int j = 0; j < 3; ++j) m = std::max(m, x[b * 24 + i * 12 + j * 4 + k]);
      EXPECT_EQ(o6[i * 4 + k], m);
    }
  r.backward();
  const Vec dx = r.get(r.din[0], kRows * 24);
  expect_fd(r, r.in[0], x, dx, douts, "dx");
}

TEST(TracedGraph, WhereStopGradientBatchedMatmulLogsumexpGelu) {
  // out0 = where(x > 0, x, 0.1 x) * stop_gradient(x); out1 = logsumexp(gelu_erf(x), -1);
  // out2 = matmul(a, b) per sample; out3 = (x > 0) (no gradient).
  const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 2, 3]}, {"shape": [null, 3, 2]}],
    "constants": [{"shape": [], "values": [0]}, {"shape": [], "values": [0.1]}],
    "nodes": [{"op": "greater", "in": [["input", 0], ["constant", 0]]},
              {"op": "multiply", "in": [["input", 0], ["constant", 1]]},
              {"op": "where", "in": [["node", 0], ["input", 0], ["node", 1]]},
              {"op": "stop_gradient", "in": [["input", 0]]},
              {"op": "multiply", "in": [["node", 2], ["node", 3]]},
              {"op": "gelu", "in": [["input", 0]], "attrs": {"approximate": false}},
              {"op": "logsumexp", "in": [["node", 5]], "attrs": {"axis": -1}},
              {"op": "matmul", "in": [["input", 0], ["input", 1]]}],
    "outputs": [["node", 4], ["node", 6], ["node", 7], ["node", 0]]})");
  const auto s = g.output_shapes();
  EXPECT_EQ(s[1].dims, (std::vector<int64_t>{-1, 2}));
  EXPECT_EQ(s[2].dims, (std::vector<int64_t>{-1, 2, 2}));
  CpuBackend be(0, 1);
  GraphRun r(be, g, kRows);
  // x away from where's switch at 0 (finite differences must not cross it).
  Vec x = uniform_floats(kRows * 6, 30);
  for (float& v : x) v = v < 0 ? v - 0.1f : v + 0.1f;
  const Vec y = uniform_floats(kRows * 6, 31);
  std::vector<Vec> douts;
  for (int i = 0; i < 4; ++i) {
    douts.push_back(uniform_floats(static_cast<size_t>(g.output_floats(i, kRows)), 32, i));
    r.set(r.dout[static_cast<size_t>(i)], douts.back());
  }
  r.set(r.in[0], x);
  r.set(r.in[1], y);
  r.forward();
  const Vec o0 = r.output(0), o1 = r.output(1), o2 = r.output(2), o3 = r.output(3);
  for (int64_t b = 0; b < kRows; ++b)
    for (int i = 0; i < 2; ++i) {
      double m = -1e30, se = 0.0;
      std::vector<double> ge(3);
      for (int j = 0; j < 3; ++j) {
        const double v = x[b * 6 + i * 3 + j];
        EXPECT_NEAR(o0[b * 6 + i * 3 + j], (v > 0 ? v : 0.1 * v) * v, 1e-6);
        EXPECT_EQ(o3[b * 6 + i * 3 + j], v > 0 ? 1.0f : 0.0f);
        ge[j] = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
        m = std::max(m, ge[j]);
      }
      for (int j = 0; j < 3; ++j) se += std::exp(ge[j] - m);
      EXPECT_NEAR(o1[b * 2 + i], m + std::log(se), 1e-5);
      for (int k = 0; k < 2; ++k) {
        double acc = 0.0;
        for (int j = 0; j < 3; ++j) acc += double(x[b * 6 + i * 3 + j]) * y[b * 6 + j * 2 + k];
        EXPECT_NEAR(o2[b * 4 + i * 2 + k], acc, 1e-6);
      }
    }
  r.backward();
  const Vec dx = r.get(r.din[0], kRows * 6), dy = r.get(r.din[1], kRows * 6);
  // stop_gradient: out0's gradient in x is where's only: (x > 0 ? 1 : 0.1) * x * dout0, so
  // finite differences (which see both factors move) are taken with out0 left out.
  std::vector<Vec> fd_douts = douts;
  std::fill(fd_douts[0].begin(), fd_douts[0].end(), 0.0f);
  r.set(r.dout[0], fd_douts[0]);
  r.backward();
  const Vec dx_no0 = r.get(r.din[0], kRows * 6);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(dx[i] - dx_no0[i], (x[i] > 0 ? 1.0 : 0.1) * x[i] * douts[0][i], 1e-6) << i;
  expect_fd(r, r.in[0], x, dx_no0, fd_douts, "dx");
  expect_fd(r, r.in[1], y, dy, douts, "dy");
}

TEST(TracedGraph, ParseAndShapeErrorsNameTheNode) {
  const std::string head = R"({"inputs": [{"shape": [null, 3]}], "weights": [{"shape": [4, 2]}],
    "nodes": [{"op": "relu", "in": [["input", 0]]}, )";
  auto msg = error_of(
      head +
          R"({"op": "frobnicate", "in": [["node", 0]], "line": "R/f.R#7"}], "outputs": [["node", 1]]})",
      ErrorKind::value);
  EXPECT_NE(msg.find("node 1 (op \"frobnicate\", R/f.R#7)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown op"), std::string::npos) << msg;
  msg = error_of(head + R"({"op": "abs", "in": [["node", 1]]}], "outputs": [["node", 1]]})",
                 ErrorKind::value);
  EXPECT_NE(msg.find("node 1 (op \"abs\")"), std::string::npos) << msg;
  EXPECT_NE(msg.find("earlier node"), std::string::npos) << msg;
  msg = error_of(
      head + R"({"op": "add", "in": [["node", 0], ["weight", 3]]}], "outputs": [["node", 1]]})",
      ErrorKind::value);
  EXPECT_NE(msg.find("node 1 (op \"add\")"), std::string::npos) << msg;
  msg = error_of(
      head +
          R"({"op": "matmul", "in": [["node", 0], ["weight", 0]], "line": "R/m.R#2"}], "outputs": [["node", 1]]})",
      ErrorKind::shape);
  EXPECT_NE(msg.find("node 1 (op \"matmul\", R/m.R#2)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(None, 3)"), std::string::npos) << msg;
  msg = error_of(
      head + R"({"op": "add", "in": [["node", 0], ["weight", 0]]}], "outputs": [["node", 1]]})",
      ErrorKind::shape);
  EXPECT_NE(msg.find("node 1 (op \"add\")"), std::string::npos) << msg;
  msg = error_of(
      head +
          R"({"op": "sum", "in": [["node", 0]], "attrs": {"axis": 2}}], "outputs": [["node", 1]]})",
      ErrorKind::value);
  EXPECT_NE(msg.find("node 1 (op \"sum\")"), std::string::npos) << msg;
  EXPECT_NE(msg.find("axis 2"), std::string::npos) << msg;
  msg = error_of(
      head +
          R"({"op": "transpose", "in": [["node", 0]], "attrs": {"axes": [1, 0]}}], "outputs": [["node", 1]]})",
      ErrorKind::value);
  EXPECT_NE(msg.find("batch axis"), std::string::npos) << msg;
  msg = error_of(
      head +
          R"({"op": "reshape", "in": [["node", 0]], "attrs": {"shape": [2]}}], "outputs": [["node", 1]]})",
      ErrorKind::shape);
  EXPECT_NE(msg.find("node 1 (op \"reshape\")"), std::string::npos) << msg;
  msg = error_of(
      head +
          R"({"op": "gelu", "in": [["node", 0]], "attrs": {"approximate": 1}}], "outputs": [["node", 1]]})",
      ErrorKind::value);
  EXPECT_NE(msg.find("approximate"), std::string::npos) << msg;
  msg = error_of(
      head +
          R"({"op": "sum", "in": [["node", 0]], "attrs": {"keepdim": true}}], "outputs": [["node", 1]]})",
      ErrorKind::value);
  EXPECT_NE(msg.find("node 1 (op \"sum\"): unknown attribute \"keepdim\""), std::string::npos)
      << msg;
  msg = error_of(
      head + R"({"op": "abs", "in": [["node", 0]], "atrs": {}}], "outputs": [["node", 1]]})",
      ErrorKind::value);
  EXPECT_NE(msg.find("unknown key \"atrs\""), std::string::npos) << msg;
  msg = error_of(R"({"inputs": [{"shape": [3, null]}], "nodes": [], "outputs": [["input", 0]]})",
                 ErrorKind::value);
  EXPECT_NE(msg.find("input 0: dims must be integers >= 0"), std::string::npos) << msg;
  msg = error_of(R"({"inputs": [5], "nodes": [], "outputs": [["input", 0]]})", ErrorKind::value);
  EXPECT_NE(msg.find("input 0: expected an object"), std::string::npos) << msg;
  msg = error_of(R"({"inputs": [{"shape": [null]}], "constants": [{"shape": [2], "values": [1]}],
                     "nodes": [], "outputs": [["input", 0]]})",
                 ErrorKind::value);
  EXPECT_NE(msg.find("constant 0: \"values\" must be a list of 2 numbers"), std::string::npos)
      << msg;
}

TEST(TracedGraph, SameBitsOnOneAndTwoThreads) {
  const TracedGraph g = graph(kDense);
  const int64_t rows = 64;
  const Vec x = uniform_floats(rows * 4, 20), w = uniform_floats(12, 21), b = uniform_floats(3, 22);
  const Vec dout = uniform_floats(rows * 3, 23);
  std::vector<Vec> results[2];
  for (int t = 0; t < 2; ++t) {
    CpuBackend be(0, t + 1);
    GraphRun r(be, g, rows);
    r.set(r.in[0], x);
    r.set(r.w[0], w);
    r.set(r.w[1], b);
    r.set(r.dout[0], dout);
    r.forward();
    r.backward();
    results[t] = {r.output(), r.get(r.din[0], rows * 4), r.get(r.dw[0], 12), r.get(r.dw[1], 3)};
  }
  for (size_t k = 0; k < results[0].size(); ++k)
    EXPECT_EQ(0, std::memcmp(results[0][k].data(), results[1][k].data(), results[0][k].size() * 4))
        << k;
}

TEST(TracedGraph, ForwardAndBackwardAllocateNothing) {
  const TracedGraph g = graph(kDense);
  CpuBackend be(0, 2);
  GraphRun r(be, g, kRows);
  r.set(r.in[0], uniform_floats(kRows * 4, 24));
  r.set(r.w[0], uniform_floats(12, 25));
  r.set(r.w[1], uniform_floats(3, 26));
  r.set(r.dout[0], uniform_floats(kRows * 3, 27));
  EXPECT_EQ(r.allocations_after_warmup(), 0);
}

// The per-row / fixed split of the buffer sizes (a layer sizes its aux for a
// row budget from them): exact for every rows, on a graph with both kinds.
TEST(TracedGraph, BufferSizesSplitIntoPerRowAndFixedParts) {
  for (const char* text : {kDense, R"({"inputs": [{"shape": [null, 3]}],
      "nodes": [{"op": "sum", "in": [["input", 0]], "attrs": {"axis": 0}},
                {"op": "mean", "in": [["input", 0]], "attrs": {"axis": [0, 1]}},
                {"op": "multiply", "in": [["input", 0], ["node", 0]]}],
      "outputs": [["node", 2], ["node", 1]]})"}) {
    const TracedGraph g = graph(text);
    EXPECT_GT(g.aux_per_row(), 0);
    EXPECT_GT(g.scratch_per_row(), 0);
    for (int64_t rows : {0, 1, 7, 1000}) {
      EXPECT_EQ(g.aux_floats(rows), g.aux_per_row() * rows + g.aux_fixed()) << rows;
      EXPECT_EQ(g.scratch_floats(rows), g.scratch_per_row() * rows + g.scratch_fixed()) << rows;
    }
  }
  // The sum over the batch axis and the mean of all are fixed-size values.
  const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 3]}],
      "nodes": [{"op": "sum", "in": [["input", 0]], "attrs": {"axis": 0}}],
      "outputs": [["node", 0]]})");
  EXPECT_GE(g.aux_fixed(), 3);
}

}  // namespace
}  // namespace mr
