// TracedGraph's dropout op (Keras' Dropout called inside a custom layer's
// call(); nn/traced_random_ops.cpp) on the CPU: the identity at inference
// in both directions; while training, every value either dropped (exactly
// 0) or scaled by 1 / (1 - rate), about `rate` of them dropped, the
// gradient the same mask times the output gradient; a sample's mask the
// same whatever the rows before it on its replica (split invariance: a
// slice of the batch run with its global row offset draws the same
// masks), other masks for another step, seed or layer stream; a value used
// twice gets both gradients; the contract's errors; no allocation.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/step_scalars.h"
#include "nn/traced_graph.h"
#include "tests/test_util.h"
#include "tests/traced_graph_run.h"

namespace mr {
namespace {

using testgraph::error_of;
using testgraph::graph;
using testgraph::GraphRun;
using testgraph::Vec;

constexpr int64_t kRows = 10, kCols = 40;

std::string dropout_graph(double rate, int seed) {
  return R"({"inputs": [{"shape": [null, 40]}],
    "nodes": [{"op": "dropout", "in": [["input", 0]], "attrs": {"rate": )" +
         std::to_string(rate) + R"(, "seed": )" + std::to_string(seed) + R"(}}],
    "outputs": [["node", 0]]})";
}

// Forward and backward of `rows` rows of x / dout (row-major, kCols wide).
void run(GraphRun& r, const Vec& x, const Vec& dout) {
  r.set(r.in[0], x);
  r.set(r.dout[0], dout);
  r.forward();
  r.backward();
}

TEST(TracedDropout, IsTheIdentityAtInference) {
  const TracedGraph g = graph(dropout_graph(0.5, 7));
  CpuBackend be(0, 1);
  GraphRun r(be, g, kRows);
  const Vec x = uniform_floats(kRows * kCols, 1), dout = uniform_floats(kRows * kCols, 2);
  run(r, x, dout);
  EXPECT_EQ(r.output(), x);
  EXPECT_EQ(r.get(r.din[0], x.size()), dout);
}

TEST(TracedDropout, DropsOrScalesWhileTrainingAndItsGradientUsesTheSameMask) {
  const float rate = 0.25f;
  const TracedGraph g = graph(dropout_graph(rate, 7));
  CpuBackend be(0, 1);
  GraphRun r(be, g, kRows);
  r.run.training = true;
  r.run.stream = 3;
  const Vec x = uniform_floats(kRows * kCols, 1, 0, 0.5f, 1.5f),
            dout = uniform_floats(kRows * kCols, 2);
  run(r, x, dout);
  const Vec y = r.output(), dx = r.get(r.din[0], x.size());
  int dropped = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (y[i] == 0.0f) {
      ++dropped;
      EXPECT_EQ(dx[i], 0.0f) << i;
    } else {
      EXPECT_FLOAT_EQ(y[i], x[i] / (1.0f - rate)) << i;
      EXPECT_FLOAT_EQ(dx[i], dout[i] / (1.0f - rate)) << i;
    }
  }
  // 400 draws of p = 0.25: 100 expected, sd 8.7; [60, 140] is 4.6 sd.
  EXPECT_GT(dropped, 60);
  EXPECT_LT(dropped, 140);
  EXPECT_EQ(r.allocations_after_warmup(), 0);
}

TEST(TracedDropout, ASamplesMaskDependsOnItsGlobalRowNotOnTheSplit) {
  const TracedGraph g = graph(dropout_graph(0.5, 11));
  CpuBackend be(0, 1);
  const Vec x(kRows * kCols, 1.0f), dout(kRows * kCols, 1.0f);
  GraphRun whole(be, g, kRows);
  whole.run.training = true;
  whole.run.stream = 5;
  run(whole, x, dout);
  const Vec all = whole.output();
  // Rows 6..9 on a "second replica": row offset 6.
  const int64_t tail = 4;
  GraphRun part(be, g, tail);
  part.run = whole.run;
  part.run.row_offset = kRows - tail;
  run(part, Vec(tail * kCols, 1.0f), Vec(tail * kCols, 1.0f));
  const Vec got = part.output();
  for (int64_t i = 0; i < tail * kCols; ++i)
    EXPECT_EQ(got[static_cast<size_t>(i)], all[static_cast<size_t>((kRows - tail) * kCols + i)]);
}

TEST(TracedDropout, AnotherStepSeedOrStreamDrawsAnotherMask) {
  CpuBackend be(0, 1);
  const Vec x(kRows * kCols, 1.0f), dout(kRows * kCols, 1.0f);
  auto mask = [&](int seed, uint32_t stream, uint64_t step) {
    const TracedGraph g = graph(dropout_graph(0.5, seed));
    GraphRun r(be, g, kRows);
    StepScalars s;
    s.step = step;
    DeviceBuffer block = be.allocate(sizeof(StepScalars));
    be.upload(block.get(), &s, sizeof s);
    r.run.training = true;
    r.run.stream = stream;
    r.run.scalars = static_cast<const StepScalars*>(block.get());
    run(r, x, dout);
    return r.output();
  };
  const Vec base = mask(1, 1, 1);
  EXPECT_EQ(mask(1, 1, 1), base);
  EXPECT_NE(mask(1, 1, 2), base);
  EXPECT_NE(mask(2, 1, 1), base);
  EXPECT_NE(mask(1, 2, 1), base);
}

TEST(TracedDropout, AValueUsedTwiceGetsBothGradients) {
  // y = dropout(x) + x: dx = dout * mask + dout.
  const TracedGraph g = graph(R"({"inputs": [{"shape": [null, 40]}],
    "nodes": [{"op": "dropout", "in": [["input", 0]], "attrs": {"rate": 0.5, "seed": 3}},
              {"op": "add", "in": [["node", 0], ["input", 0]]}],
    "outputs": [["node", 1]]})");
  CpuBackend be(0, 1);
  GraphRun r(be, g, kRows);
  r.run.training = true;
  const Vec x(kRows * kCols, 1.0f), dout = uniform_floats(kRows * kCols, 4);
  run(r, x, dout);
  const Vec y = r.output(), dx = r.get(r.din[0], x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const bool kept = y[i] != 1.0f;  // kept: 2 + 1; dropped: 0 + 1
    EXPECT_FLOAT_EQ(dx[i], kept ? dout[i] * 2.0f + dout[i] : dout[i]) << i;
  }
}

TEST(TracedDropout, RejectsARateOutsideZeroToOneAndAMissingSeed) {
  EXPECT_NE(
      error_of(dropout_graph(1.0, 1), ErrorKind::value).find("\"rate\" must be a number in [0, 1)"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"inputs": [{"shape": [null, 2]}],
    "nodes": [{"op": "dropout", "in": [["input", 0]], "attrs": {"rate": 0.5}}],
    "outputs": [["node", 0]]})",
                     ErrorKind::value)
                .find("\"seed\" must be a non-negative integer"),
            std::string::npos);
}

}  // namespace
}  // namespace mr
