// TracedGraph's take op (rows of an unbatched table by indices, Keras'
// take along axis 0: an embedding lookup inside a custom layer's call()):
// forward against a loop, the table's gradient a scatter-add (a repeated
// index gets the sum of its rows' gradients) and none to the indices; an
// index out of range is a value error; a batched table or another axis is
// refused at parse time; nothing allocates.
#include <gtest/gtest.h>

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
using testgraph::graph;
using testgraph::GraphRun;
using testgraph::Vec;

// Indices (rows x 3) into a 5 x 2 weight table.
const char* kTakeGraph = R"({"inputs": [{"shape": [null, 3]}],
  "weights": [{"name": "table", "shape": [5, 2]}],
  "nodes": [{"op": "take", "in": [["weight", 0], ["input", 0]], "attrs": {"axis": 0}}],
  "outputs": [["node", 0]]})";

TEST(TracedTake, GathersRowsAndScatterAddsTheirGradient) {
  const TracedGraph g = graph(kTakeGraph);
  ASSERT_EQ(g.output_shapes()[0].dims, (std::vector<int64_t>{-1, 3, 2}));
  CpuBackend be(0, 1);
  const int64_t rows = 2;
  GraphRun r(be, g, rows);
  const Vec table = uniform_floats(10, 1);
  const Vec idx = {4, 0, 4, 1, 3, 0};
  const Vec dout = uniform_floats(12, 2);
  r.set(r.w[0], table);
  r.set(r.in[0], idx);
  r.set(r.dout[0], dout);
  r.forward();
  r.backward();
  const Vec y = r.output();
  for (size_t i = 0; i < idx.size(); ++i)
    for (size_t d = 0; d < 2; ++d)
      EXPECT_EQ(y[i * 2 + d], table[static_cast<size_t>(idx[i]) * 2 + d]) << i << " " << d;
  Vec want(10, 0.0f);
  for (size_t i = 0; i < idx.size(); ++i)
    for (size_t d = 0; d < 2; ++d) want[static_cast<size_t>(idx[i]) * 2 + d] += dout[i * 2 + d];
  const Vec dw = r.get(r.dw[0], 10);
  for (size_t k = 0; k < 10; ++k) EXPECT_FLOAT_EQ(dw[k], want[k]) << k;
  for (float d : r.get(r.din[0], 6)) EXPECT_EQ(d, 0.0f);  // no gradient to the indices
  EXPECT_EQ(r.allocations_after_warmup(), 0);
}

TEST(TracedTake, AnIndexOutOfRangeIsAValueError) {
  const TracedGraph g = graph(kTakeGraph);
  CpuBackend be(0, 1);
  GraphRun r(be, g, 1);
  r.set(r.w[0], Vec(10, 1.0f));
  r.set(r.in[0], Vec{0, 5, 1});
  try {
    r.forward();
    ADD_FAILURE() << "no error for index 5 of a 5-row table";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::value) << e.what();
  }
}

TEST(TracedTake, RefusesABatchedTableAndOtherAxes) {
  EXPECT_NE(error_of(R"({"inputs": [{"shape": [null, 3]}, {"shape": [null, 2]}],
    "nodes": [{"op": "take", "in": [["input", 0], ["input", 1]], "attrs": {"axis": 0}}],
    "outputs": [["node", 0]]})",
                     ErrorKind::value)
                .find("weight or constant"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"inputs": [{"shape": [null, 3]}],
    "weights": [{"name": "table", "shape": [5, 2]}],
    "nodes": [{"op": "take", "in": [["weight", 0], ["input", 0]], "attrs": {"axis": 1}}],
    "outputs": [["node", 0]]})",
                     ErrorKind::value)
                .find("axis 0"),
            std::string::npos);
}

}  // namespace
}  // namespace mr
