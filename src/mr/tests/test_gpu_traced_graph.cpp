// TracedGraph on a CUDA backend against the same graph on the CPU backend:
// a dense layer with weights, a cross-entropy from logits and reductions
// (including over the batch axis, over axes apart, and a transpose), the
// index, copy and cast ops (i15-ops: one_hot, argmax, take_along_axis with
// broadcasting, concatenate, stack, slice, cast, unbatched inputs, the
// sparse cross-entropy from logits), forward values and every gradient
// within 1e-5 relative + 1e-6 absolute; a bad take_along_axis index is
// reported at the next sync. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "core/error.h"
#include "core/json.h"
#include "nn/traced_graph.h"
#include "tests/test_util.h"
#include "tests/traced_ops_ref.h"

namespace mr {
namespace {

using Vec = std::vector<float>;

// Runs `g` forward and backward on `be` with the given host data and returns
// the outputs, then the input gradients, then the weight gradients.
std::vector<Vec> run_graph(Backend& be, const TracedGraph& g, int64_t rows,
                           const std::vector<Vec>& inputs, const std::vector<Vec>& weights,
                           const std::vector<Vec>& douts) {
  std::vector<DeviceBuffer> keep;
  auto put = [&](const Vec& v, size_t n) {
    keep.push_back(be.allocate(std::max<size_t>(n, 1) * sizeof(float)));
    if (!v.empty()) be.upload(keep.back().get(), v.data(), v.size() * sizeof(float));
    return static_cast<float*>(keep.back().get());
  };
  std::vector<const float*> in, w, dout;
  std::vector<float*> out, din, dw;
  for (const Vec& v : inputs) {
    in.push_back(put(v, v.size()));
    din.push_back(put({}, v.size()));
  }
  for (const Vec& v : weights) {
    w.push_back(put(v, v.size()));
    dw.push_back(put({}, v.size()));
  }
  for (int i = 0; i < g.num_outputs(); ++i) {
    out.push_back(put({}, static_cast<size_t>(g.output_floats(i, rows))));
    dout.push_back(put(douts[static_cast<size_t>(i)], douts[static_cast<size_t>(i)].size()));
  }
  float* consts = put({}, static_cast<size_t>(g.constant_floats()));
  g.upload_constants(be, consts);
  float* aux = put({}, static_cast<size_t>(g.aux_floats(rows)));
  float* scratch = put({}, static_cast<size_t>(g.scratch_floats(rows)));
  g.forward(be, rows, in.data(), w.data(), consts, out.data(), aux);
  g.backward(be, rows, in.data(), w.data(), consts, aux, scratch, dout.data(), din.data(),
             dw.data());
  std::vector<Vec> res;
  auto get = [&](const float* p, size_t n) {
    Vec v(n);
    be.download(v.data(), p, n * sizeof(float));
    res.push_back(v);
  };
  for (int i = 0; i < g.num_outputs(); ++i)
    get(out[static_cast<size_t>(i)], static_cast<size_t>(g.output_floats(i, rows)));
  for (size_t i = 0; i < inputs.size(); ++i) get(din[i], inputs[i].size());
  for (size_t i = 0; i < weights.size(); ++i) get(dw[i], weights[i].size());
  return res;
}

void expect_same(const std::string& text, int64_t rows, const std::vector<Vec>& inputs,
                 const std::vector<Vec>& weights) {
  const TracedGraph g(parse_json(text, "test graph"));
  std::vector<Vec> douts;
  for (int i = 0; i < g.num_outputs(); ++i)
    douts.push_back(uniform_floats(static_cast<size_t>(g.output_floats(i, rows)), 90,
                                   static_cast<uint32_t>(i)));
  auto cpu = make_cpu_backend(0, 2);
  auto dev = make_cuda_backend(0, 0);
  const auto a = run_graph(*cpu, g, rows, inputs, weights, douts);
  const auto b = run_graph(*dev, g, rows, inputs, weights, douts);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k)
    for (size_t i = 0; i < a[k].size(); ++i)
      ASSERT_TRUE(testref::close(b[k][i], a[k][i], 1e-5, 1e-6))
          << "result " << k << " [" << i << "]: gpu " << b[k][i] << ", cpu " << a[k][i];
}

TEST(GpuTracedGraph, MatchesTheCpu) {
  MR_REQUIRE_GPUS(1);
  const int64_t rows = 37;
  expect_same(R"({"inputs": [{"shape": [null, 4]}],
    "weights": [{"name": "w", "shape": [4, 3]}, {"name": "b", "shape": [3]}],
    "nodes": [{"op": "matmul", "in": [["input", 0], ["weight", 0]]},
              {"op": "add", "in": [["node", 0], ["weight", 1]]},
              {"op": "tanh", "in": [["node", 1]]}],
    "outputs": [["node", 2]]})",
              rows, {uniform_floats(rows * 4, 91)},
              {uniform_floats(12, 92), uniform_floats(3, 93)});
  expect_same(R"({"inputs": [{"shape": [null, 5]}, {"shape": [null, 5]}],
    "nodes": [{"op": "log_softmax", "in": [["input", 1]], "attrs": {"axis": -1}},
              {"op": "multiply", "in": [["input", 0], ["node", 0]]},
              {"op": "sum", "in": [["node", 1]], "attrs": {"axis": -1}},
              {"op": "negative", "in": [["node", 2]]}],
    "outputs": [["node", 3]]})",
              rows, {uniform_floats(rows * 5, 94, 0, 0.0f, 1.0f), uniform_floats(rows * 5, 95)},
              {});
  expect_same(R"({"inputs": [{"shape": [null, 2, 3]}],
    "nodes": [{"op": "transpose", "in": [["input", 0]], "attrs": {"axes": [0, 2, 1]}},
              {"op": "mean", "in": [["node", 0]], "attrs": {"axis": 0}},
              {"op": "max", "in": [["node", 0]], "attrs": {"axis": [1, 2], "keepdims": true}},
              {"op": "softmax", "in": [["input", 0]], "attrs": {"axis": 0}},
              {"op": "sum", "in": [["input", 0]], "attrs": {"axis": [0, 2]}}],
    "outputs": [["node", 1], ["node", 2], ["node", 3], ["node", 4]]})",
              rows, {uniform_floats(rows * 6, 96)}, {});
}

// ---- i15-ops: index, copy and cast ops ----
TEST(GpuTracedGraph, IndexCopyAndCastOpsMatchTheCpu) {
  MR_REQUIRE_GPUS(1);
  const int64_t rows = 29;
  // Class ids 0..9 (and one out of range for one_hot), indices in [-5, 4].
  Vec labels(rows), ids(rows), idx(rows * 6);
  for (int64_t i = 0; i < rows; ++i) {
    labels[static_cast<size_t>(i)] = static_cast<float>(i % 10);
    ids[static_cast<size_t>(i)] = static_cast<float>(i % 11);
  }
  for (size_t i = 0; i < idx.size(); ++i)
    idx[i] = static_cast<float>(static_cast<int>(i * 7 % 10) - 5);
  expect_same(R"({"inputs": [{"shape": [null, 1]}, {"shape": [null, 10]}],
    "nodes": [{"op": "log_softmax", "in": [["input", 1]], "attrs": {"axis": -1}},
              {"op": "cast", "in": [["input", 0]], "attrs": {"dtype": "int32"}},
              {"op": "take_along_axis", "in": [["node", 0], ["node", 1]], "attrs": {"axis": -1}},
              {"op": "negative", "in": [["node", 2]]}],
    "outputs": [["node", 3]]})",
              rows, {labels, uniform_floats(rows * 10, 97, 0, -4.0f, 4.0f)}, {});
  expect_same(
      R"({"inputs": [{"shape": [null, 1, 5]}, {"shape": [null, 3, 2]}, {"shape": [null, 1]}],
    "nodes": [{"op": "take_along_axis", "in": [["input", 0], ["input", 1]], "attrs": {"axis": 2}},
              {"op": "cast", "in": [["node", 0]], "attrs": {"dtype": "bfloat16"}},
              {"op": "concatenate", "in": [["node", 1], ["node", 0]], "attrs": {"axis": 1}},
              {"op": "stack", "in": [["node", 2], ["node", 2]], "attrs": {"axis": -1}},
              {"op": "slice", "in": [["node", 3]], "attrs": {"start_indices": [0, 1, 0, 1], "shape": [null, 4, 2, 1]}},
              {"op": "argmax", "in": [["node", 2]], "attrs": {"axis": 1}},
              {"op": "one_hot", "in": [["input", 2]], "attrs": {"num_classes": 10, "axis": 1}},
              {"op": "cast", "in": [["node", 4]], "attrs": {"dtype": "float16"}}],
    "outputs": [["node", 7], ["node", 5], ["node", 6]]})",
      rows, {uniform_floats(rows * 5, 98), idx, ids}, {});
  // Unbatched inputs beside a batched one, and casts of edge values.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  expect_same(R"({"inputs": [{"shape": [null, 8]}, {"shape": [8]}],
    "nodes": [{"op": "multiply", "in": [["input", 0], ["input", 1]]},
              {"op": "cast", "in": [["input", 1]], "attrs": {"dtype": "float16"}},
              {"op": "cast", "in": [["input", 1]], "attrs": {"dtype": "int8"}},
              {"op": "cast", "in": [["input", 1]], "attrs": {"dtype": "uint8"}},
              {"op": "cast", "in": [["input", 1]], "attrs": {"dtype": "bool"}}],
    "outputs": [["node", 0], ["node", 1], ["node", 2], ["node", 3], ["node", 4]]})",
              rows,
              {uniform_floats(rows * 8, 99),
               {65520.0f, 1.00048828125f, 1e-7f, -300.0f, 255.5f, -2.7f, nan, 0.0f}},
              {});
}

TEST(GpuTracedGraph, BadTakeAlongAxisIndexIsReportedAtTheNextSync) {
  MR_REQUIRE_GPUS(1);
  const TracedGraph g(parse_json(R"({"inputs": [{"shape": [null, 5]}, {"shape": [null, 1]}],
    "nodes": [{"op": "take_along_axis", "in": [["input", 0], ["input", 1]], "attrs": {"axis": -1}}],
    "outputs": [["node", 0]]})",
                                 "test graph"));
  auto dev = make_cuda_backend(0, 0);
  try {
    run_graph(*dev, g, 3, {uniform_floats(15, 100), {0, 7, 1}}, {}, {Vec{1, 1, 1}});
    ADD_FAILURE() << "no error for index 7";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::value);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("take_along_axis: index 7 at position 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[-5, 4]"), std::string::npos) << msg;
  }
  // The backend stays usable and the word is reset.
  const auto ok = run_graph(*dev, g, 3, {uniform_floats(15, 100), {0, 4, -5}}, {}, {Vec{1, 1, 1}});
  EXPECT_EQ(ok[0].size(), 3u);
}

}  // namespace
}  // namespace mr
