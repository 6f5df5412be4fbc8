// TracedGraph's index, copy and cast ops (issue 15, i15-ops) on the CPU:
// one_hot, argmax, take_along_axis, concatenate, stack, cast, slice and
// unbatched graph inputs. Forward values against loops in the test (double
// where arithmetic is involved); gradients against the analytic rule
// (scatter-add, slices, straight through) and against central finite
// differences of the graph's own f32 forward (testgraph::expect_fd: step
// 1e-2, objective in double, 3e-3 relative + 3e-3 absolute); the contract's
// errors naming the node's op and R line; no allocation inside forward /
// backward; and the stable sparse cross-entropy from logits
// -take_along_axis(log_softmax(y_pred), cast(y_true, "int32"), axis = -1).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"
#include "nn/traced_graph.h"
#include "tests/test_util.h"
#include "tests/traced_graph_run.h"

namespace mr {
namespace {

using testgraph::error_of;
using testgraph::expect_fd;
using testgraph::graph;
using testgraph::GraphRun;
using testgraph::Vec;

constexpr int64_t kRows = 4;
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Runs forward and backward once with the given inputs and output gradient.
void run_once(GraphRun& r, const std::vector<Vec>& ins, const std::vector<Vec>& douts) {
  for (size_t i = 0; i < ins.size(); ++i) r.set(r.in[i], ins[i]);
  for (size_t i = 0; i < douts.size(); ++i) r.set(r.dout[i], douts[i]);
  r.forward();
  r.backward();
}

TEST(TracedGraphOps, OneHotPutsOnesAtTheTruncatedIdsAndZerosForIdsOutOfRange) {
  // axis -1 appends the class axis; axis 1 puts it before the id's axis.
  for (int axis : {-1, 1}) {
    const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 2]}],
      "nodes": [{"op": "one_hot", "in": [["input", 0]], "attrs": {"num_classes": 3, "axis": )" +
                                std::to_string(axis) + R"(}}],
      "outputs": [["node", 0]]})");
    const std::vector<int64_t> want =
        axis == -1 ? std::vector<int64_t>{-1, 2, 3} : std::vector<int64_t>{-1, 3, 2};
    ASSERT_EQ(g.output_shapes()[0].dims, want);
    CpuBackend be(0, 1);
    GraphRun r(be, g, kRows);
    const Vec ids = {0, 2.7f, 1, -1, 3, -0.5f, kNaN, 1};
    const Vec dout = uniform_floats(kRows * 6, 3);
    run_once(r, {ids}, {dout});
    const Vec out = r.output();
    for (int64_t b = 0; b < kRows; ++b)
      for (int64_t p = 0; p < 2; ++p)
        for (int64_t c = 0; c < 3; ++c) {
          const float id = ids[static_cast<size_t>(b * 2 + p)];
          // Keras on TF casts the ids to int64 first (truncation); NaN is no class.
          const float expect =
              !std::isnan(id) && std::trunc(id) == static_cast<float>(c) ? 1.0f : 0.0f;
          const int64_t at = axis == -1 ? (b * 2 + p) * 3 + c : (b * 3 + c) * 2 + p;
          EXPECT_EQ(out[static_cast<size_t>(at)], expect) << b << " " << p << " " << c;
        }
    // No gradient flows to the ids.
    for (float d : r.get(r.din[0], kRows * 2)) EXPECT_EQ(d, 0.0f);
    EXPECT_EQ(g.constant_floats(), 0);
    // Hand-worked: 2.7 is class 2 and -0.5 class 0.
    const int64_t at27 = axis == -1 ? 1 * 3 + 2 : 2 * 2 + 1;
    const int64_t at05 = axis == -1 ? (2 * 2 + 1) * 3 + 0 : (2 * 3 + 0) * 2 + 1;
    EXPECT_EQ(out[static_cast<size_t>(at27)], 1.0f);
    EXPECT_EQ(out[static_cast<size_t>(at05)], 1.0f);
  }
}

TEST(TracedGraphOps, ArgmaxTakesTheFirstMaximumAndNaNAsTheMaximum) {
  const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 3, 4]}, {"shape": [2, 3]}],
    "nodes": [{"op": "argmax", "in": [["input", 0]], "attrs": {"axis": -1}},
              {"op": "argmax", "in": [["input", 0]], "attrs": {"axis": 1, "keepdims": true}},
              {"op": "argmax", "in": [["input", 1]], "attrs": {"axis": 0}}],
    "outputs": [["node", 0], ["node", 1], ["node", 2]]})");
  const auto shapes = g.output_shapes();
  EXPECT_EQ(shapes[0].dims, (std::vector<int64_t>{-1, 3}));
  EXPECT_EQ(shapes[1].dims, (std::vector<int64_t>{-1, 1, 4}));
  EXPECT_FALSE(shapes[2].batched);
  EXPECT_EQ(shapes[2].dims, (std::vector<int64_t>{3}));
  CpuBackend be(0, 2);
  GraphRun r(be, g, kRows);
  Vec x = uniform_floats(kRows * 12, 5);
  x[1] = x[3] = 9.0f;    // a tie in row 0 of sample 0: the first (1) wins
  x[12 + 4 + 2] = kNaN;  // sample 1, row 1: NaN wins over anything after it
  x[12 + 4 + 3] = 50.0f;
  x[24 + 0] = -5.0f;  // sample 2, column 0 along axis 1
  const Vec u = {1, 5, 5, 7, 5, 2};
  r.set(r.in[0], x);
  r.set(r.in[1], u);
  r.forward();
  const Vec a0 = r.output(0), a1 = r.output(1), a2 = r.output(2);
  for (int64_t b = 0; b < kRows; ++b)
    for (int64_t i = 0; i < 3; ++i) {
      int64_t best = 0;
      for (int64_t j = 0; j < 4; ++j) {
        const float v = x[static_cast<size_t>((b * 3 + i) * 4 + j)];
        const float m = x[static_cast<size_t>((b * 3 + i) * 4 + best)];
        if (std::isnan(m)) break;
        if (std::isnan(v) || v > m) best = j;
      }
      EXPECT_EQ(a0[static_cast<size_t>(b * 3 + i)], static_cast<float>(best)) << b << " " << i;
    }
  EXPECT_EQ(a0[0], 1.0f);
  EXPECT_EQ(a0[3 + 1], 2.0f);
  for (int64_t b = 0; b < kRows; ++b)
    for (int64_t j = 0; j < 4; ++j) {
      int64_t best = 0;
      for (int64_t i = 1; i < 3; ++i) {
        const float v = x[static_cast<size_t>((b * 3 + i) * 4 + j)];
        const float m = x[static_cast<size_t>((b * 3 + best) * 4 + j)];
        if (!std::isnan(m) && (std::isnan(v) || v > m)) best = i;
      }
      EXPECT_EQ(a1[static_cast<size_t>(b * 4 + j)], static_cast<float>(best)) << b << " " << j;
    }
  EXPECT_EQ(a2, (Vec{1, 0, 0}));
}

// x (None, 4, 3), indices (None, 2, 3) along axis 1 (negative ones count
// from the end), an index repeated so that the scatter-add adds.
TEST(TracedGraphOps, TakeAlongAxisGathersAndScatterAddsItsGradient) {
  const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 4, 3]}, {"shape": [null, 2, 3]}],
    "nodes": [{"op": "take_along_axis", "in": [["input", 0], ["input", 1]], "attrs": {"axis": 1}}],
    "outputs": [["node", 0]]})");
  EXPECT_EQ(g.output_shapes()[0].dims, (std::vector<int64_t>{-1, 2, 3}));
  CpuBackend be(0, 1);
  GraphRun r(be, g, kRows);
  const Vec x = uniform_floats(kRows * 12, 7);
  Vec idx(kRows * 6);
  for (size_t i = 0; i < idx.size(); ++i)
    idx[i] = static_cast<float>(static_cast<int>(i * 7 % 8) - 4);
  idx[0] = idx[3] = 2.0f;  // sample 0, column 0: both j take row 2
  const Vec dout = uniform_floats(kRows * 6, 8);
  run_once(r, {x, idx}, {dout});
  const Vec out = r.output();
  std::vector<double> dx(x.size(), 0.0);
  for (int64_t b = 0; b < kRows; ++b)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t i = 0; i < 3; ++i) {
        const size_t p = static_cast<size_t>((b * 2 + j) * 3 + i);
        int64_t e = static_cast<int64_t>(idx[p]);
        if (e < 0) e += 4;
        const size_t src = static_cast<size_t>((b * 4 + e) * 3 + i);
        EXPECT_EQ(out[p], x[src]) << p;
        dx[src] += dout[p];
      }
  const Vec got = r.get(r.din[0], x.size());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(got[i], dx[i], 1e-6) << i;
  EXPECT_FLOAT_EQ(got[2 * 3], dout[0] + dout[3]);
  for (float d : r.get(r.din[1], idx.size())) EXPECT_EQ(d, 0.0f);
  expect_fd(r, r.in[0], x, got, {dout}, "d x");
}

// Broadcasting between x and the indices on the other axes: x broadcast
// (its gradient sums over the broadcast axis), and fixed indices broadcast
// over the rows and the last axis.
TEST(TracedGraphOps, TakeAlongAxisBroadcastsTheOtherAxes) {
  {
    const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 1, 5]}, {"shape": [null, 3, 2]}],
      "nodes": [{"op": "take_along_axis", "in": [["input", 0], ["input", 1]], "attrs": {"axis": 2}},
                {"op": "square", "in": [["node", 0]]}],
      "outputs": [["node", 1]]})");
    EXPECT_EQ(g.output_shapes()[0].dims, (std::vector<int64_t>{-1, 3, 2}));
    CpuBackend be(0, 2);
    GraphRun r(be, g, kRows);
    const Vec x = uniform_floats(kRows * 5, 11);
    Vec idx(kRows * 6);
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<float>((i * 3) % 5);
    const Vec dout = uniform_floats(kRows * 6, 12);
    run_once(r, {x, idx}, {dout});
    const Vec out = r.output();
    std::vector<double> dx(x.size(), 0.0);
    for (int64_t b = 0; b < kRows; ++b)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 2; ++k) {
          const size_t p = static_cast<size_t>((b * 3 + j) * 2 + k);
          const size_t src = static_cast<size_t>(b * 5 + static_cast<int64_t>(idx[p]));
          EXPECT_FLOAT_EQ(out[p], x[src] * x[src]) << p;
          dx[src] += 2.0 * x[src] * dout[p];
        }
    const Vec got = r.get(r.din[0], x.size());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(got[i], dx[i], 1e-5) << i;
    expect_fd(r, r.in[0], x, got, {dout}, "d x broadcast");
  }
  {
    const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 4, 3]}, {"shape": [1, 2, 1]}],
      "nodes": [{"op": "take_along_axis", "in": [["input", 0], ["input", 1]], "attrs": {"axis": -2}}],
      "outputs": [["node", 0]]})");
    EXPECT_EQ(g.output_shapes()[0].dims, (std::vector<int64_t>{-1, 2, 3}));
    CpuBackend be(0, 1);
    GraphRun r(be, g, kRows);
    const Vec x = uniform_floats(kRows * 12, 13), idx = {3, -4};
    const Vec dout = uniform_floats(kRows * 6, 14);
    run_once(r, {x, idx}, {dout});
    const Vec out = r.output();
    const Vec got = r.get(r.din[0], x.size());
    for (int64_t b = 0; b < kRows; ++b)
      for (int64_t i = 0; i < 3; ++i) {
        EXPECT_EQ(out[static_cast<size_t>((b * 2 + 0) * 3 + i)],
                  x[static_cast<size_t>((b * 4 + 3) * 3 + i)]);
        EXPECT_EQ(out[static_cast<size_t>((b * 2 + 1) * 3 + i)],
                  x[static_cast<size_t>((b * 4 + 0) * 3 + i)]);
        EXPECT_EQ(got[static_cast<size_t>((b * 4 + 1) * 3 + i)], 0.0f);
        EXPECT_EQ(got[static_cast<size_t>((b * 4 + 3) * 3 + i)],
                  dout[static_cast<size_t>((b * 2) * 3 + i)]);
      }
  }
}

TEST(TracedGraphOps, TakeAlongAxisRejectsIndicesOutOfRangeNamingTheNode) {
  const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 5]}, {"shape": [null, 1]}],
    "nodes": [{"op": "take_along_axis", "in": [["input", 0], ["input", 1]], "attrs": {"axis": -1},
               "line": "R/loss.R#4"}],
    "outputs": [["node", 0]]})");
  CpuBackend be(0, 1);
  GraphRun r(be, g, 3);
  r.set(r.in[0], uniform_floats(15, 15));
  for (const Vec& idx : {Vec{0, 5, 1}, Vec{-6, 0, 0}, Vec{0, 1.5f, 0}, Vec{kNaN, 0, 0}}) {
    r.set(r.in[1], idx);
    try {
      r.forward();
      ADD_FAILURE() << "no error for index " << idx[0] << ", " << idx[1];
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::value);
      const std::string msg = e.what();
      EXPECT_NE(msg.find("node 0 (op \"take_along_axis\", R/loss.R#4)"), std::string::npos) << msg;
      EXPECT_NE(msg.find("[-5, 4]"), std::string::npos) << msg;
    }
  }
  r.set(r.in[1], Vec{4, -5, -1});
  r.forward();  // the extremes are fine
}

TEST(TracedGraphOps, ConcatenateAndStackCopyBoxesAndSliceTheGradient) {
  const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 2, 3]}, {"shape": [null, 1, 3]}],
    "nodes": [{"op": "concatenate", "in": [["input", 0], ["input", 1], ["input", 0]], "attrs": {"axis": 1}},
              {"op": "stack", "in": [["input", 1], ["input", 1]], "attrs": {"axis": -1}},
              {"op": "concatenate", "in": [["input", 0], ["input", 0]]}],
    "outputs": [["node", 0], ["node", 1], ["node", 2]]})");
  const auto sh = g.output_shapes();
  EXPECT_EQ(sh[0].dims, (std::vector<int64_t>{-1, 5, 3}));
  EXPECT_EQ(sh[1].dims, (std::vector<int64_t>{-1, 1, 3, 2}));
  EXPECT_EQ(sh[2].dims, (std::vector<int64_t>{-1, 2, 6}));
  CpuBackend be(0, 2);
  GraphRun r(be, g, kRows);
  const Vec a = uniform_floats(kRows * 6, 16), b = uniform_floats(kRows * 3, 17);
  const std::vector<Vec> douts = {uniform_floats(kRows * 15, 18), uniform_floats(kRows * 6, 19),
                                  uniform_floats(kRows * 12, 20)};
  run_once(r, {a, b}, douts);
  const Vec o0 = r.output(0), o1 = r.output(1), o2 = r.output(2);
  std::vector<double> da(a.size(), 0.0), db(b.size(), 0.0);
  for (int64_t s = 0; s < kRows; ++s) {
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t c = 0; c < 3; ++c) {
        const size_t o = static_cast<size_t>((s * 5 + j) * 3 + c);
        const bool from_b = j == 2;
        const size_t src = from_b ? static_cast<size_t>(s * 3 + c)
                                  : static_cast<size_t>((s * 2 + (j < 2 ? j : j - 3)) * 3 + c);
        EXPECT_EQ(o0[o], from_b ? b[src] : a[src]) << o;
        (from_b ? db : da)[src] += douts[0][o];
      }
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t k = 0; k < 2; ++k) {
        const size_t o = static_cast<size_t>((s * 3 + c) * 2 + k);
        EXPECT_EQ(o1[o], b[static_cast<size_t>(s * 3 + c)]) << o;
        db[static_cast<size_t>(s * 3 + c)] += douts[1][o];
      }
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t c = 0; c < 6; ++c) {
        const size_t o = static_cast<size_t>((s * 2 + j) * 6 + c);
        const size_t src = static_cast<size_t>((s * 2 + j) * 3 + c % 3);
        EXPECT_EQ(o2[o], a[src]) << o;
        da[src] += douts[2][o];
      }
  }
  const Vec ga = r.get(r.din[0], a.size()), gb = r.get(r.din[1], b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(ga[i], da[i], 1e-6) << i;
  for (size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(gb[i], db[i], 1e-6) << i;
  expect_fd(r, r.in[0], a, ga, douts, "d a");
  expect_fd(r, r.in[1], b, gb, douts, "d b");
}

// Keras' slice: the box of start_indices and shape; the batch axis all rows.
TEST(TracedGraphOps, SliceCopiesTheBoxAndItsGradientIsZeroOutside) {
  const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 4, 5]}],
    "nodes": [{"op": "slice", "in": [["input", 0]], "attrs": {"start_indices": [0, 1, 2], "shape": [null, 2, 3]}},
              {"op": "exp", "in": [["node", 0]]}],
    "outputs": [["node", 1]]})");
  EXPECT_EQ(g.output_shapes()[0].dims, (std::vector<int64_t>{-1, 2, 3}));
  CpuBackend be(0, 1);
  GraphRun r(be, g, kRows);
  const Vec x = uniform_floats(kRows * 20, 21), dout = uniform_floats(kRows * 6, 22);
  run_once(r, {x}, {dout});
  const Vec out = r.output(), got = r.get(r.din[0], x.size());
  std::vector<double> dx(x.size(), 0.0);
  for (int64_t s = 0; s < kRows; ++s)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        const size_t o = static_cast<size_t>((s * 2 + i) * 3 + j);
        const size_t src = static_cast<size_t>((s * 4 + 1 + i) * 5 + 2 + j);
        EXPECT_NEAR(out[o], std::exp(static_cast<double>(x[src])), 1e-6) << o;
        dx[src] = std::exp(static_cast<double>(x[src])) * dout[o];
      }
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(got[i], dx[i], 1e-5) << i;
  expect_fd(r, r.in[0], x, got, {dout}, "d x");
}

// An independent reference of rounding to a float format with `bits`
// significant bits (round to nearest even) and min normal exponent emin
// (subnormals below it), overflowing to Inf above max_finite: frexp / ldexp
// in double.
double round_to(double x, int bits, int emin, double max_finite) {
  if (std::isnan(x) || std::isinf(x) || x == 0.0) return x;
  int e = 0;
  std::frexp(x, &e);                           // x = m 2^e, 0.5 <= |m| < 1
  const int q = std::max(e, emin + 1) - bits;  // the quantum's exponent
  const double r = std::nearbyint(std::ldexp(x, -q));
  const double v = std::ldexp(r, q);
  // Past max_finite: Inf when rounding went beyond the format (round to
  // nearest even of the overflow threshold).
  return std::fabs(v) > max_finite ? std::copysign(INFINITY, x) : v;
}

TEST(TracedGraphOps, CastRoundsTruncatesSaturatesAndPassesGradientsAsTensorFlow) {
  const Vec x = {0.0f,           -0.0f,          2.7f,       -2.7f,    127.9f,     -300.0f,
                 300.0f,         1e10f,          -1e10f,     kNaN,     INFINITY,   -INFINITY,
                 0.5f,           -0.99f,         65519.0f,   65520.0f, 1e-7f,      -3e-6f,
                 1.00048828125f, 1.00146484375f, 3.1415927f, 1e38f,    3.3961e38f, 255.5f};
  const size_t n = x.size();
  const char* dtypes[] = {"float32", "float64", "float16", "bfloat16", "int8",
                          "int16",   "int32",   "int64",   "uint8",    "bool"};
  for (const char* dt : dtypes) {
    SCOPED_TRACE(dt);
    const TracedGraph g = graph(R"({"inputs": [{"shape": [)" + std::to_string(n) + R"(]}],
      "nodes": [{"op": "cast", "in": [["input", 0]], "attrs": {"dtype": ")" +
                                dt + R"("}}],
      "outputs": [["node", 0]]})");
    CpuBackend be(0, 1);
    GraphRun r(be, g, 0);  // an unbatched input: rows do not matter
    const Vec dout = uniform_floats(n, 23);
    run_once(r, {x}, {dout});
    const Vec out = r.output(), dx = r.get(r.din[0], n);
    const std::string d = dt;
    for (size_t i = 0; i < n; ++i) {
      const double v = x[i];
      double want = v;
      if (d == "float16") {
        want = round_to(v, 11, -14, 65504.0);
      } else if (d == "bfloat16") {
        want = round_to(v, 8, -126, 3.3895313892515355e38);
      } else if (d == "bool") {
        want = v != 0.0 ? 1.0 : 0.0;
      } else if (d != "float32" && d != "float64") {
        const double lo = d == "int8"    ? -128
                          : d == "int16" ? -32768
                          : d == "int32" ? -2147483648.0
                          : d == "int64" ? -9223372036854775808.0
                                         : 0.0;
        const double hi = d == "int8"    ? 127
                          : d == "int16" ? 32767
                          : d == "int32" ? 2147483647.0
                          : d == "int64" ? 9223372036854775807.0
                                         : 255.0;
        want = std::isnan(v) ? 0.0 : std::min(hi, std::max(lo, std::trunc(v)));
        want = static_cast<float>(want);  // stored as the nearest float
      }
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(out[i])) << i;
      } else {
        EXPECT_EQ(out[i], static_cast<float>(want)) << "x = " << x[i];
      }
      const bool floaty = d.rfind("float", 0) == 0 || d == "bfloat16";
      EXPECT_EQ(dx[i], floaty ? dout[i] : 0.0f) << i;
    }
  }
  // Hand-worked ties of float16: 1 + 2^-11 rounds to 1 (even), 1 + 3 2^-11 up
  // to 1 + 2^-9; 65520 is Inf; 1e-7 is 2 quanta of 2^-24.
  const TracedGraph g = graph(R"({"inputs": [{"shape": [4]}],
    "nodes": [{"op": "cast", "in": [["input", 0]], "attrs": {"dtype": "float16"}}],
    "outputs": [["node", 0]]})");
  CpuBackend be(0, 1);
  GraphRun r(be, g, 1);
  r.set(r.in[0], Vec{1.00048828125f, 1.00146484375f, 65520.0f, 1e-7f});
  r.forward();
  EXPECT_EQ(r.output(), (Vec{1.0f, 1.001953125f, INFINITY, 1.1920928955078125e-07f}));
}

// Unbatched inputs beside a batched one: broadcast over the rows, their
// gradient summed over the rows; one without a gradient buffer (its sink is
// in the fixed part of scratch); a graph of unbatched values only at rows 0.
TEST(TracedGraphOps, UnbatchedInputsBroadcastOverTheRows) {
  const TracedGraph g =
      graph(R"({"inputs": [{"shape": [null, 3]}, {"shape": [3]}, {"shape": [2, 3]}],
    "nodes": [{"op": "multiply", "in": [["input", 0], ["input", 1]]},
              {"op": "sum", "in": [["input", 2]], "attrs": {"axis": 0}},
              {"op": "add", "in": [["node", 0], ["node", 1]]}],
    "outputs": [["node", 2]]})");
  EXPECT_FALSE(g.input_shape(1).batched);
  EXPECT_EQ(g.input_shape(2).dims, (std::vector<int64_t>{2, 3}));
  CpuBackend be(0, 1);
  GraphRun r(be, g, kRows);
  const Vec x = uniform_floats(kRows * 3, 24), w = {1.5f, -2.0f, 0.25f}, u = {1, 2, 3, 4, 5, 6};
  const Vec dout = uniform_floats(kRows * 3, 25);
  r.din_p[2] = nullptr;  // no gradient wanted for input 2
  run_once(r, {x, w, u}, {dout});
  const Vec out = r.output(), dw = r.get(r.din[1], 3);
  for (int64_t b = 0; b < kRows; ++b)
    for (int64_t c = 0; c < 3; ++c) {
      const size_t i = static_cast<size_t>(b * 3 + c);
      EXPECT_FLOAT_EQ(out[i], x[i] * w[static_cast<size_t>(c)] + u[static_cast<size_t>(c)] +
                                  u[static_cast<size_t>(c + 3)]);
    }
  for (int64_t c = 0; c < 3; ++c) {
    double s = 0.0;
    for (int64_t b = 0; b < kRows; ++b)
      s += static_cast<double>(x[static_cast<size_t>(b * 3 + c)]) *
           dout[static_cast<size_t>(b * 3 + c)];
    EXPECT_NEAR(dw[static_cast<size_t>(c)], s, 1e-5) << c;
  }
  expect_fd(r, r.in[1], w, dw, {dout}, "d w");

  const TracedGraph h = graph(R"({"inputs": [{"shape": [2, 3]}],
    "nodes": [{"op": "transpose", "in": [["input", 0]], "attrs": {"axes": [1, 0]}}],
    "outputs": [["node", 0]]})");
  EXPECT_EQ(h.aux_per_row(), 0);
  EXPECT_EQ(h.scratch_per_row(), 0);
  GraphRun q(be, h, 0);
  run_once(q, {u}, {Vec{1, 1, 1, 1, 1, 1}});
  EXPECT_EQ(q.output(), (Vec{1, 4, 2, 5, 3, 6}));
}

// The stable sparse cross-entropy from logits of the issue, per sample:
// -log_softmax(y_pred)[y_true]; its gradient softmax(y_pred) - onehot(y_true).
TEST(TracedGraphOps, SparseCrossEntropyFromLogitsMatchesTheFormula) {
  const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 1]}, {"shape": [null, 10]}],
    "nodes": [{"op": "log_softmax", "in": [["input", 1]], "attrs": {"axis": -1}, "line": "R/l.R#1"},
              {"op": "cast", "in": [["input", 0]], "attrs": {"dtype": "int32"}},
              {"op": "take_along_axis", "in": [["node", 0], ["node", 1]], "attrs": {"axis": -1}},
              {"op": "negative", "in": [["node", 2]]}],
    "outputs": [["node", 3]]})");
  EXPECT_EQ(g.output_shapes()[0].dims, (std::vector<int64_t>{-1, 1}));
  const int64_t rows = 6;
  CpuBackend be(0, 2);
  GraphRun r(be, g, rows);
  const Vec yt = {0, 9, 3, 3, 7, 1};
  Vec yp = uniform_floats(rows * 10, 26, 0, -4.0f, 4.0f);
  yp[10 * 5 + 1] = 60.0f;  // a large logit (stable: no overflow)
  const Vec dout = uniform_floats(rows, 27, 0, 0.1f, 1.0f);
  run_once(r, {yt, yp}, {dout});
  const Vec out = r.output(), dp = r.get(r.din[1], yp.size());
  for (int64_t b = 0; b < rows; ++b) {
    double m = -INFINITY, s = 0.0;
    for (int64_t c = 0; c < 10; ++c)
      m = std::max(m, static_cast<double>(yp[static_cast<size_t>(b * 10 + c)]));
    for (int64_t c = 0; c < 10; ++c) s += std::exp(yp[static_cast<size_t>(b * 10 + c)] - m);
    const auto t = static_cast<int64_t>(yt[static_cast<size_t>(b)]);
    const double loss = m + std::log(s) - yp[static_cast<size_t>(b * 10 + t)];
    EXPECT_NEAR(out[static_cast<size_t>(b)], loss, 1e-5 + 1e-6 * loss) << b;
    for (int64_t c = 0; c < 10; ++c) {
      const double sm = std::exp(yp[static_cast<size_t>(b * 10 + c)] - m) / s;
      EXPECT_NEAR(dp[static_cast<size_t>(b * 10 + c)],
                  (sm - (c == t ? 1.0 : 0.0)) * dout[static_cast<size_t>(b)], 1e-6)
          << b << " " << c;
    }
  }
  for (float d : r.get(r.din[0], rows)) EXPECT_EQ(d, 0.0f);
  expect_fd(r, r.in[1], yp, dp, {dout}, "d y_pred");
}

TEST(TracedGraphOps, ContractErrorsNameTheNodeAndLine) {
  struct Case {
    const char* node;
    const char* inputs;
    ErrorKind kind;
    const char* says;
  };
  const Case cases[] = {
      {R"({"op": "one_hot", "in": [["input", 0]], "attrs": {"num_classes": 0}, "line": "R/a.R#1"})",
       R"([{"shape": [null, 2]}])", ErrorKind::value, "\"num_classes\" must be > 0"},
      {R"({"op": "one_hot", "in": [["input", 0]], "attrs": {"axis": -1}, "line": "R/a.R#1"})",
       R"([{"shape": [null, 2]}])", ErrorKind::value, "\"num_classes\" (an integer) is required"},
      {R"({"op": "one_hot", "in": [["input", 0]], "attrs": {"num_classes": 3, "axis": 0}, "line": "R/a.R#1"})",
       R"([{"shape": [null, 2]}])", ErrorKind::value, "before the batch axis"},
      {R"({"op": "argmax", "in": [["input", 0]], "attrs": {"axis": 0}, "line": "R/a.R#1"})",
       R"([{"shape": [null, 2]}])", ErrorKind::value, "batch axis"},
      {R"({"op": "argmax", "in": [["input", 0]], "line": "R/a.R#1"})", R"([{"shape": [null, 2]}])",
       ErrorKind::value, "\"axis\" (an integer) is required"},
      {R"({"op": "argmax", "in": [["input", 0]], "attrs": {"axis": 1, "keepdim": true}, "line": "R/a.R#1"})",
       R"([{"shape": [null, 2]}])", ErrorKind::value, "unknown attribute \"keepdim\""},
      {R"({"op": "take_along_axis", "in": [["input", 0], ["input", 1]], "attrs": {"axis": 0}, "line": "R/a.R#1"})",
       R"([{"shape": [null, 2]}, {"shape": [null, 2]}])", ErrorKind::value, "batch axis"},
      {R"({"op": "take_along_axis", "in": [["input", 0], ["input", 1]], "attrs": {"axis": 1}, "line": "R/a.R#1"})",
       R"([{"shape": [null, 2]}, {"shape": [null, 2, 1]}])", ErrorKind::shape, "rank"},
      {R"({"op": "take_along_axis", "in": [["input", 0], ["input", 1]], "attrs": {"axis": 1}, "line": "R/a.R#1"})",
       R"([{"shape": [null, 2, 3]}, {"shape": [null, 2, 2]}])", ErrorKind::shape,
       "do not broadcast"},
      {R"({"op": "take_along_axis", "in": [["input", 0], ["input", 1]], "attrs": {"axis": 1}, "line": "R/a.R#1"})",
       R"([{"shape": [null, 2]}, {"shape": [3, 2]}])", ErrorKind::shape, "along the batch axis"},
      {R"({"op": "concatenate", "in": [["input", 0], ["input", 1]], "attrs": {"axis": 0}, "line": "R/a.R#1"})",
       R"([{"shape": [null, 2]}, {"shape": [null, 2]}])", ErrorKind::value, "batch axis"},
      {R"({"op": "concatenate", "in": [["input", 0], ["input", 1]], "line": "R/a.R#1"})",
       R"([{"shape": [null, 2]}, {"shape": [1, 2]}])", ErrorKind::value,
       "mix batched and unbatched"},
      {R"({"op": "concatenate", "in": [["input", 0], ["input", 1]], "attrs": {"axis": 2}, "line": "R/a.R#1"})",
       R"([{"shape": [null, 2, 3]}, {"shape": [null, 3, 3]}])", ErrorKind::shape,
       "differ outside axis 2"},
      {R"({"op": "stack", "in": [["input", 0], ["input", 1]], "attrs": {"axis": 0}, "line": "R/a.R#1"})",
       R"([{"shape": [null, 2]}, {"shape": [null, 2]}])", ErrorKind::value, "batch axis"},
      {R"({"op": "stack", "in": [["input", 0], ["input", 1]], "line": "R/a.R#1"})",
       R"([{"shape": [2]}, {"shape": [3]}])", ErrorKind::shape, "shapes must be equal"},
      {R"({"op": "cast", "in": [["input", 0]], "attrs": {"dtype": "int4"}, "line": "R/a.R#1"})",
       R"([{"shape": [null, 2]}])", ErrorKind::value, "\"dtype\" must be one of"},
      {R"({"op": "slice", "in": [["input", 0]], "attrs": {"start_indices": [1, 0], "shape": [null, 2]}, "line": "R/a.R#1"})",
       R"([{"shape": [null, 2]}])", ErrorKind::value,
       "the batch axis takes start 0 and shape null"},
      {R"({"op": "slice", "in": [["input", 0]], "attrs": {"start_indices": [0, 1], "shape": [null, 2]}, "line": "R/a.R#1"})",
       R"([{"shape": [null, 2]}])", ErrorKind::value, "leaves 0..1"},
      {R"({"op": "slice", "in": [["input", 0]], "attrs": {"start_indices": [0], "shape": [null]}, "line": "R/a.R#1"})",
       R"([{"shape": [null, 2]}])", ErrorKind::value, "must list 2 entries"},
  };
  for (const Case& c : cases) {
    const std::string text = std::string(R"({"inputs": )") + c.inputs + R"(, "nodes": [)" + c.node +
                             R"(], "outputs": [["node", 0]]})";
    const std::string msg = error_of(text, c.kind);
    const std::string op = parse_json(c.node, "case")["op"].get<std::string>();
    EXPECT_NE(msg.find("node 0 (op \"" + op + "\", R/a.R#1)"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.says), std::string::npos) << msg;
  }
}

const char* kEveryOp = R"({"inputs": [{"shape": [null, 1, 5]}, {"shape": [null, 3, 2]}],
    "nodes": [{"op": "take_along_axis", "in": [["input", 0], ["input", 1]], "attrs": {"axis": 2}},
              {"op": "cast", "in": [["node", 0]], "attrs": {"dtype": "bfloat16"}},
              {"op": "concatenate", "in": [["node", 1], ["node", 0]], "attrs": {"axis": 1}},
              {"op": "stack", "in": [["node", 2], ["node", 2]], "attrs": {"axis": 1}},
              {"op": "slice", "in": [["node", 3]], "attrs": {"start_indices": [0, 1, 2, 0], "shape": [null, 1, 3, 2]}},
              {"op": "argmax", "in": [["node", 4]], "attrs": {"axis": -1}},
              {"op": "one_hot", "in": [["node", 5]], "attrs": {"num_classes": 2}},
              {"op": "multiply", "in": [["node", 6], ["node", 4]]}],
    "outputs": [["node", 7]]})";

// Indices in range for kEveryOp's take_along_axis (x's last axis has 5).
Vec every_op_indices(int64_t rows) {
  Vec idx(static_cast<size_t>(rows * 6));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<float>(static_cast<int>(i % 10) - 5);
  return idx;
}

TEST(TracedGraphOps, ForwardAndBackwardAllocateNothing) {
  const TracedGraph g = graph(kEveryOp);
  CpuBackend be(0, 2);
  GraphRun r(be, g, kRows);
  run_once(r, {uniform_floats(kRows * 5, 28), every_op_indices(kRows)},
           {uniform_floats(kRows * 6, 29)});
  const int64_t before = be.system_allocations();
  for (int i = 0; i < 3; ++i) {
    r.forward();
    r.backward();
  }
  EXPECT_EQ(be.system_allocations(), before);
}

// Enough rows that the team splits every op's work: the same bits on one
// and two threads (each output is computed by one thread in a fixed order).
TEST(TracedGraphOps, SameBitsOnOneAndTwoThreads) {
  const TracedGraph g = graph(kEveryOp);
  const int64_t rows = 6000;
  const Vec x = uniform_floats(rows * 5, 30), idx = every_op_indices(rows);
  const Vec dout = uniform_floats(rows * 6, 31);
  std::vector<Vec> res[2];
  for (int t = 0; t < 2; ++t) {
    CpuBackend be(0, t + 1);
    GraphRun r(be, g, rows);
    run_once(r, {x, idx}, {dout});
    res[t] = {r.output(), r.get(r.din[0], x.size())};
  }
  for (size_t k = 0; k < 2; ++k)
    EXPECT_EQ(0, std::memcmp(res[0][k].data(), res[1][k].data(), res[0][k].size() * 4)) << k;
  // The gradient reaches x (the scatter-add ran).
  double norm = 0.0;
  for (float v : res[0][1]) norm += std::fabs(v);
  EXPECT_GT(norm, 0.0);
}

}  // namespace
}  // namespace mr
