// Fused unary chains (i15-fuse) on the CPU: Backend::unary_chain bit-equal to
// separate unary() calls for every UnaryOp at every chain length, odd sizes,
// n = 0, 1 and 2 threads and an output aliasing x; a traced graph's chains
// give bit-equal forward values and gradients to the same graph planned
// without fusion, run as ONE backend call per chain (counted by a CpuBackend
// wrapper), cut at Backend::kMaxUnaryChain, and allocate nothing in
// forward / backward.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/json.h"
#include "core/op_kinds.h"
#include "nn/traced_graph.h"
#include "tests/test_util.h"
#include "tests/traced_graph_run.h"
#include "tests/traced_ops_ref.h"

namespace mr {
namespace {

using testgraph::GraphRun;
using testgraph::Vec;

bool same_bits(const Vec& a, const Vec& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Counts the element-wise unary calls and the chains' lengths.
class CountingCpu : public CpuBackend {
 public:
  using CpuBackend::CpuBackend;
  void unary(UnaryOp op, int64_t n, const float* x, float* y) override {
    ++unary_calls;
    CpuBackend::unary(op, n, x, y);
  }
  void unary_chain(int64_t n, const UnaryOp* ops, int count, const float* x,
                   float* const* outs) override {
    chain_lengths.push_back(count);
    CpuBackend::unary_chain(n, ops, count, x, outs);
  }
  int unary_calls = 0;
  std::vector<int> chain_lengths;
};

TEST(UnaryChain, BitEqualToSeparateUnaryCallsForEveryOpAndLength) {
  const std::vector<UnaryOp> all = testref::all_unary_ops();
  for (int threads : {1, 2}) {
    CpuBackend be(0, threads);
    for (int64_t n : {0, 1, 7, 513, 40001}) {
      Vec x = uniform_floats(static_cast<size_t>(n), 11 + n, 0, -2.5f, 2.5f);
      const float edges[] = {0.0f,
                             -0.0f,
                             std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity(),
                             std::numeric_limits<float>::quiet_NaN(),
                             1e30f};
      for (size_t i = 0; i < x.size() && i < 6; ++i) x[i * 5 % x.size()] = edges[i];
      for (size_t first = 0; first < all.size(); ++first) {
        for (int count = 1; count <= Backend::kMaxUnaryChain; ++count) {
          UnaryOp ops[Backend::kMaxUnaryChain];
          for (int c = 0; c < count; ++c) ops[c] = all[(first + 5 * c) % all.size()];
          std::vector<Vec> fused(count, Vec(x.size(), -7.0f)), ref(count, Vec(x.size()));
          float* outs[Backend::kMaxUnaryChain];
          for (int c = 0; c < count; ++c) outs[c] = fused[c].data();
          be.unary_chain(n, ops, count, x.data(), outs);
          const float* src = x.data();
          for (int c = 0; c < count; ++c) {
            be.unary(ops[c], n, src, ref[c].data());
            src = ref[c].data();
          }
          for (int c = 0; c < count; ++c)
            ASSERT_TRUE(same_bits(fused[c], ref[c]))
                << "threads " << threads << " n " << n << " link " << c << " (" << op_name(ops[c])
                << ") of " << count << " from " << op_name(all[first]);
        }
      }
    }
  }
}

TEST(UnaryChain, FirstOutputMayAliasTheInput) {
  CpuBackend be(0, 2);
  const Vec x = uniform_floats(1001, 5, 0, -2.0f, 2.0f);
  const UnaryOp ops[] = {UnaryOp::sigmoid, UnaryOp::gelu_erf, UnaryOp::silu};
  Vec ref0(x.size()), ref1(x.size()), ref2(x.size());
  be.unary(ops[0], 1001, x.data(), ref0.data());
  be.unary(ops[1], 1001, ref0.data(), ref1.data());
  be.unary(ops[2], 1001, ref1.data(), ref2.data());
  Vec inout = x, o1(x.size()), o2(x.size());
  float* outs[] = {inout.data(), o1.data(), o2.data()};
  be.unary_chain(1001, ops, 3, inout.data(), outs);
  EXPECT_TRUE(same_bits(inout, ref0));
  EXPECT_TRUE(same_bits(o1, ref1));
  EXPECT_TRUE(same_bits(o2, ref2));
}

TEST(UnaryChain, CountOutsideOneToTheMaximumIsAnInternalError) {
  CpuBackend be(0, 1);
  Vec x(4, 1.0f), y(4);
  UnaryOp ops[Backend::kMaxUnaryChain + 1] = {};
  float* outs[Backend::kMaxUnaryChain + 1] = {};
  for (auto& o : outs) o = y.data();
  for (int count : {0, Backend::kMaxUnaryChain + 1}) {
    try {
      be.unary_chain(4, ops, count, x.data(), outs);
      ADD_FAILURE() << "count " << count << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::internal);
      EXPECT_NE(std::string(e.what()).find("unary_chain"), std::string::npos) << e.what();
    }
  }
}

// square -> exp -> log1p -> tanh on input 0; node 1 (exp) is also read by the
// multiply (a second reader does not stop the chain); gelu with
// approximate = false then gelu (tanh) then relu follow the multiply, a
// second chain.
constexpr const char* kChains = R"({"inputs": [{"shape": [null, 3]}],
  "nodes": [{"op": "square", "in": [["input", 0]]},
            {"op": "exp", "in": [["node", 0]]},
            {"op": "log1p", "in": [["node", 1]]},
            {"op": "tanh", "in": [["node", 2]]},
            {"op": "multiply", "in": [["node", 3], ["node", 1]]},
            {"op": "gelu", "in": [["node", 4]], "attrs": {"approximate": false}},
            {"op": "gelu", "in": [["node", 5]]},
            {"op": "relu", "in": [["node", 6]]}],
  "outputs": [["node", 7], ["node", 2]]})";

void run(const TracedGraph& g, int64_t rows, const Vec& x, const std::vector<Vec>& douts,
         std::vector<Vec>& values, CountingCpu& be) {
  GraphRun r(be, g, rows);
  r.set(r.in[0], x);
  for (size_t i = 0; i < douts.size(); ++i) r.set(r.dout[i], douts[i]);
  r.forward();
  for (int i = 0; i < g.num_outputs(); ++i)
    values.push_back(
        r.get(r.out[static_cast<size_t>(i)], static_cast<size_t>(g.output_floats(i, rows))));
  values.push_back(r.get(r.aux, static_cast<size_t>(g.aux_floats(rows))));
  r.backward();
  values.push_back(r.get(r.din[0], x.size()));
}

TEST(TracedFusion, ChainsMatchTheUnfusedGraphBitForBitInOneCallEach) {
  const Json j = parse_json(kChains, "test graph");
  const TracedGraph fused(j), plain(j, false);
  const int64_t rows = 37;
  const Vec x = uniform_floats(rows * 3, 3, 0, -1.5f, 1.5f);
  const std::vector<Vec> douts = {uniform_floats(rows * 3, 4), uniform_floats(rows * 3, 5)};
  CountingCpu bf(0, 2), bp(0, 2);
  std::vector<Vec> vf, vp;
  run(fused, rows, x, douts, vf, bf);
  run(plain, rows, x, douts, vp, bp);
  ASSERT_EQ(vf.size(), vp.size());
  for (size_t k = 0; k < vf.size(); ++k) EXPECT_TRUE(same_bits(vf[k], vp[k])) << k;
  // the aux (every node's value) is not trivially equal: a real run
  EXPECT_NE(vf[2][0], 0.0f);
  EXPECT_EQ(bf.unary_calls, 0);
  EXPECT_EQ(bf.chain_lengths, (std::vector<int>{4, 3}));
  EXPECT_EQ(bp.unary_calls, 7);
  EXPECT_TRUE(bp.chain_lengths.empty());
}

// Against an independent double reference too: tanh(log1p(exp(x^2))).
TEST(TracedFusion, ChainForwardMatchesADoubleReference) {
  const TracedGraph g = testgraph::graph(kChains);
  const int64_t rows = 4;
  const Vec x = uniform_floats(rows * 3, 8, 0, -1.5f, 1.5f);
  CountingCpu be(0, 1);
  std::vector<Vec> v;
  run(g, rows, x, {Vec(rows * 3, 1.0f), Vec(rows * 3, 1.0f)}, v, be);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(v[1][i], std::log1p(std::exp(double(x[i]) * x[i])), 2e-6) << i;
}

TEST(TracedFusion, LongChainsAreCutAtTheMaximum) {
  std::string nodes;
  const int len = 2 * Backend::kMaxUnaryChain + 3;
  for (int i = 0; i < len; ++i) {
    if (i > 0) nodes += ", ";
    nodes += std::string(R"({"op": ")") + (i % 2 ? "sigmoid" : "negative") + R"(", "in": [[)" +
             (i == 0 ? std::string(R"("input", 0)") : R"("node", )" + std::to_string(i - 1)) +
             "]]}";
  }
  const std::string text = R"({"inputs": [{"shape": [null, 2]}], "nodes": [)" + nodes +
                           R"(], "outputs": [["node", )" + std::to_string(len - 1) + "]]}";
  const Json j = parse_json(text, "test graph");
  const TracedGraph fused(j), plain(j, false);
  const Vec x = uniform_floats(10, 9, 0, -2.0f, 2.0f);
  CountingCpu bf(0, 1), bp(0, 1);
  std::vector<Vec> vf, vp;
  run(fused, 5, x, {uniform_floats(10, 10)}, vf, bf);
  run(plain, 5, x, {uniform_floats(10, 10)}, vp, bp);
  for (size_t k = 0; k < vf.size(); ++k) EXPECT_TRUE(same_bits(vf[k], vp[k])) << k;
  EXPECT_EQ(bf.chain_lengths,
            (std::vector<int>{Backend::kMaxUnaryChain, Backend::kMaxUnaryChain, 3}));
  EXPECT_EQ(bf.unary_calls, 0);
  EXPECT_EQ(bp.unary_calls, len);
}

TEST(TracedFusion, ForwardAndBackwardWithChainsAllocateNothing) {
  const TracedGraph g = testgraph::graph(kChains);
  CpuBackend be(0, 2);
  GraphRun r(be, g, 9);
  r.set(r.in[0], uniform_floats(27, 12, 0, -1.0f, 1.0f));
  r.set(r.dout[0], uniform_floats(27, 13));
  r.set(r.dout[1], uniform_floats(27, 14));
  EXPECT_EQ(r.allocations_after_warmup(), 0);
}

}  // namespace
}  // namespace mr
