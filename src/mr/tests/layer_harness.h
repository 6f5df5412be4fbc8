// Runs one parameter-free layer directly (no graph) on the CPU backend, for
// the reshaping, merging and activation tests: host vectors are the CPU
// backend's device memory. Checks: forward values, the adjoint identity
// <J v, w> = sum_k <v_k, J_k^T w> of linear layers, and finite differences
// of <f(x), w> for non-linear ones.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "nn/layers/registry.h"
#include "nn/replica_context.h"

namespace mr {

using Vec = std::vector<float>;

// Deterministic values in about [-2, 2] (no ties unless asked for).
inline Vec wavy(int64_t n, double a, double b) {
  Vec v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(2.0 * std::sin(a * static_cast<double>(i) + b));
  return v;
}

inline double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

class LayerRun {
 public:
  LayerRun(const std::string& cls, Json config, std::vector<Shape> in)
      : layer_(make_layer(cls, config, 7)), in_(std::move(in)), out_(layer_->output_shape(in_)) {}
  const Shape& out_shape() const { return out_; }
  const Layer& layer() const { return *layer_; }

  Vec forward(const std::vector<Vec>& x, int64_t rows) {
    rows_ = rows;
    x_ = x;
    aux_.assign(static_cast<size_t>(rows * layer_->aux_per_row(in_) + 1), 0.0f);
    work_.assign(static_cast<size_t>(layer_->work_floats(in_) + 1), 0.0f);
    y_.assign(static_cast<size_t>(rows * out_.numel()), 12345.0f);
    SoloContext ctx;
    ForwardArgs a{be_,       rows, rows, 0,           nullptr,      0,  true, {}, in_,
                  y_.data(), {},   {},   aux_.data(), work_.data(), ctx};
    for (const Vec& v : x_) a.in.push_back(v.data());
    layer_->forward(a);
    return y_;
  }
  // Gradients of the inputs for output gradient dy (after forward()).
  std::vector<Vec> backward(Vec dy) {
    std::vector<Vec> dx;
    for (const Shape& s : in_) dx.emplace_back(static_cast<size_t>(rows_ * s.numel()), 777.0f);
    SoloContext ctx;
    BackwardArgs a{be_, rows_, rows_, true, {},          in_,          y_.data(), dy.data(),
                   {},  {},    {},    {},   aux_.data(), work_.data(), ctx};
    for (const Vec& v : x_) a.in.push_back(v.data());
    for (Vec& d : dx) a.d_in.push_back(d.data());
    layer_->backward(a);
    return dx;
  }
  std::vector<Vec> inputs(int64_t rows, double seed) const {
    std::vector<Vec> x;
    for (size_t k = 0; k < in_.size(); ++k)
      x.push_back(wavy(rows * in_[k].numel(), 0.37 + 0.11 * static_cast<double>(k), seed + k));
    return x;
  }

 private:
  CpuBackend be_{0, 2};
  std::unique_ptr<Layer> layer_;
  std::vector<Shape> in_;
  Shape out_;
  int64_t rows_ = 0;
  std::vector<Vec> x_;
  Vec y_, aux_, work_;
};

// <J v, w> = sum_k <v_k, J_k^T w> for a linear layer, on random-ish v, w.
inline void expect_adjoint(LayerRun& run, int64_t rows) {
  const std::vector<Vec> v = run.inputs(rows, 0.5);
  const Vec jv = run.forward(v, rows);
  const Vec w = wavy(static_cast<int64_t>(jv.size()), 0.83, 1.7);
  const std::vector<Vec> jtw = run.backward(w);
  double rhs = 0;
  for (size_t k = 0; k < v.size(); ++k) rhs += dot(v[k], jtw[k]);
  const double lhs = dot(jv, w);
  EXPECT_NEAR(lhs, rhs, 1e-4 * (1.0 + std::fabs(lhs))) << run.layer().class_name();
}

// Central differences (step h) of L(x) = <f(x), w> against the analytic
// gradient of every input element; |fd - g| <= tol * (1 + |fd|).
inline void expect_fd(LayerRun& run, int64_t rows, const std::vector<Vec>& x0, double h,
                      double tol) {
  std::vector<Vec> x = x0;
  const Vec y = run.forward(x, rows);
  const Vec w = wavy(static_cast<int64_t>(y.size()), 0.61, 0.9);
  const std::vector<Vec> g = run.backward(w);
  for (size_t k = 0; k < x.size(); ++k)
    for (size_t i = 0; i < x[k].size(); ++i) {
      const float saved = x[k][i];
      x[k][i] = static_cast<float>(saved + h);
      const double up = dot(run.forward(x, rows), w);
      x[k][i] = static_cast<float>(saved - h);
      const double down = dot(run.forward(x, rows), w);
      x[k][i] = saved;
      const double fd = (up - down) / (2 * h);
      EXPECT_NEAR(g[k][i], fd, tol * (1.0 + std::fabs(fd)))
          << run.layer().class_name() << " input " << k << " element " << i;
    }
}

}  // namespace mr
