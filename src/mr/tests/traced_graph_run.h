// A TracedGraph's device buffers for the traced-graph tests (CPU and GPU):
// inputs, weights, outputs and their gradients, constants, aux and scratch,
// all sized before any forward / backward; plus the finite-difference check
// the tests share.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "core/json.h"
#include "nn/traced_graph.h"

namespace mr {
namespace testgraph {

using Vec = std::vector<float>;

// Device buffers of one graph on one backend, sized for `rows` up front.
struct GraphRun {
  Backend& be;
  const TracedGraph& g;
  int64_t rows;
  std::vector<DeviceBuffer> in, w, out, din, dw, dout;
  DeviceBuffer consts, aux, scratch;
  std::vector<const float*> in_p, w_p, dout_p;
  std::vector<float*> out_p, din_p, dw_p;
  TracedRun run;  // inference unless a test sets it (dropout)

  DeviceBuffer alloc(int64_t n) {
    return be.allocate(static_cast<size_t>(std::max<int64_t>(n, 1)) * 4);
  }
  GraphRun(Backend& b, const TracedGraph& graph, int64_t r) : be(b), g(graph), rows(r) {
    for (int i = 0; i < g.num_inputs(); ++i) {
      const auto& s = g.input_shape(i);
      int64_t n = s.batched ? rows : 1;
      for (size_t j = s.batched ? 1 : 0; j < s.dims.size(); ++j) n *= s.dims[j];
      in.push_back(alloc(n));
      din.push_back(alloc(n));
    }
    for (int i = 0; i < g.num_weights(); ++i) {
      int64_t n = 1;
      for (int64_t d : g.weight_shape(i).dims) n *= d;
      w.push_back(alloc(n));
      dw.push_back(alloc(n));
    }
    for (int i = 0; i < g.num_outputs(); ++i) {
      out.push_back(alloc(g.output_floats(i, rows)));
      dout.push_back(alloc(g.output_floats(i, rows)));
    }
    consts = alloc(g.constant_floats());
    g.upload_constants(be, static_cast<float*>(consts.get()));
    aux = alloc(g.aux_floats(rows));
    scratch = alloc(g.scratch_floats(rows));
    for (auto& b2 : in) in_p.push_back(static_cast<const float*>(b2.get()));
    for (auto& b2 : w) w_p.push_back(static_cast<const float*>(b2.get()));
    for (auto& b2 : dout) dout_p.push_back(static_cast<const float*>(b2.get()));
    for (auto& b2 : out) out_p.push_back(static_cast<float*>(b2.get()));
    for (auto& b2 : din) din_p.push_back(static_cast<float*>(b2.get()));
    for (auto& b2 : dw) dw_p.push_back(static_cast<float*>(b2.get()));
  }
  void set(DeviceBuffer& b, const Vec& v) { be.upload(b.get(), v.data(), v.size() * 4); }
  Vec get(const DeviceBuffer& b, size_t n) {
    Vec v(n);
    be.download(v.data(), b.get(), n * 4);
    return v;
  }
  void forward() {
    g.forward(be, rows, in_p.data(), w_p.data(), static_cast<const float*>(consts.get()),
              out_p.data(), static_cast<float*>(aux.get()), run);
  }
  void backward() {
    g.backward(be, rows, in_p.data(), w_p.data(), static_cast<const float*>(consts.get()),
               static_cast<const float*>(aux.get()), static_cast<float*>(scratch.get()),
               dout_p.data(), din_p.data(), dw_p.data(), run);
  }
  // The backend's system allocations during `passes` forward + backward
  // pairs after a first, warm-up pair (0: every buffer was sized up front).
  int64_t allocations_after_warmup(int passes = 3) {
    forward();
    backward();
    const int64_t before = be.system_allocations();
    for (int i = 0; i < passes; ++i) {
      forward();
      backward();
    }
    return be.system_allocations() - before;
  }
  Vec output(int i = 0) {
    return get(out[static_cast<size_t>(i)], static_cast<size_t>(g.output_floats(i, rows)));
  }
};

inline TracedGraph graph(const std::string& text) {
  return TracedGraph(parse_json(text, "test graph"));
}

// The message of the error that parsing `text` raises, checked to be of
// `kind` (a test failure, and "", when it raises none).
inline std::string error_of(const std::string& text, ErrorKind kind) {
  try {
    graph(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text;
  return "";
}

// sum_i <out_i, dout_i> in double, for finite differences.
inline double objective(GraphRun& r, const std::vector<Vec>& douts) {
  r.forward();
  double s = 0.0;
  for (int i = 0; i < r.g.num_outputs(); ++i) {
    const Vec o = r.output(i);
    for (size_t j = 0; j < o.size(); ++j)
      s += static_cast<double>(o[j]) * douts[static_cast<size_t>(i)][j];
  }
  return s;
}

// Central differences of the objective in every element of `buf` (holding
// `x`), against `grad`.
inline void expect_fd(GraphRun& r, DeviceBuffer& buf, Vec x, const Vec& grad,
                      const std::vector<Vec>& douts, const char* what) {
  ASSERT_EQ(x.size(), grad.size());
  const float h = 1e-2f;
  for (size_t i = 0; i < x.size(); ++i) {
    const float x0 = x[i];
    x[i] = x0 + h;
    r.set(buf, x);
    const double up = objective(r, douts);
    x[i] = x0 - h;
    r.set(buf, x);
    const double dn = objective(r, douts);
    x[i] = x0;
    r.set(buf, x);
    const double fd = (up - dn) / (2.0 * h);
    EXPECT_NEAR(grad[i], fd, 3e-3 + 3e-3 * std::fabs(fd)) << what << " element " << i;
  }
}

}  // namespace testgraph
}  // namespace mr
