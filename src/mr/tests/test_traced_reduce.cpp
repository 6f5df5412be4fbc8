// The reductions (Backend::reduce) and the softmax family along an axis
// (Backend::softmax_axis) of traced graphs on the CPU, forward and backward,
// over the first, a middle and the last axis group of a (3, 4, 5) tensor,
// against double-precision references, TensorFlow's NaN / tie / empty rules,
// and finite differences (double reference, step 1e-5: 2e-5 relative + 2e-6
// absolute; the f32 forward op, step 1e-2: 2e-3 relative + 2e-3 absolute).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/op_kinds.h"
#include "tests/test_util.h"
#include "tests/traced_ops_ref.h"

namespace mr {
namespace {

using Vec = std::vector<float>;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// outer x extent x inner views of a (3, 4, 5) tensor: axis 0, axis 1, axis 2,
// and axes (1, 2) together.
struct Layout {
  int64_t outer, extent, inner;
};
const Layout kLayouts[] = {{1, 3, 20}, {3, 4, 5}, {12, 5, 1}, {3, 20, 1}};
const ReduceOp kReduce[] = {ReduceOp::sum, ReduceOp::max, ReduceOp::min};
const SoftmaxOp kSoftmax[] = {SoftmaxOp::softmax, SoftmaxOp::log_softmax, SoftmaxOp::logsumexp};

double ref_reduce(ReduceOp op, const Layout& l, const std::vector<double>& x, int64_t o,
                  int64_t i) {
  double acc = op == ReduceOp::sum ? 0.0 : (op == ReduceOp::max ? -INFINITY : INFINITY);
  for (int64_t e = 0; e < l.extent; ++e) {
    const double v = x[static_cast<size_t>((o * l.extent + e) * l.inner + i)];
    if (std::isnan(v)) return v;
    acc = op == ReduceOp::sum ? acc + v
                              : (op == ReduceOp::max ? std::fmax(acc, v) : std::fmin(acc, v));
  }
  return acc;
}

// softmax / log_softmax at (o, e, i), or logsumexp at (o, i) (e ignored).
double ref_softmax(SoftmaxOp op, const Layout& l, const std::vector<double>& x, int64_t o,
                   int64_t e, int64_t i) {
  auto at = [&](int64_t k) { return x[static_cast<size_t>((o * l.extent + k) * l.inner + i)]; };
  double m = -INFINITY;
  for (int64_t k = 0; k < l.extent; ++k) m = std::fmax(m, at(k));
  double s = 0.0;
  for (int64_t k = 0; k < l.extent; ++k) s += std::exp(at(k) - m);
  const double lse = m + std::log(s);
  if (op == SoftmaxOp::logsumexp) return lse;
  return op == SoftmaxOp::softmax ? std::exp(at(e) - lse) : at(e) - lse;
}

std::vector<double> widen(const Vec& v) { return std::vector<double>(v.begin(), v.end()); }

int64_t out_size(SoftmaxOp op, const Layout& l) {
  return op == SoftmaxOp::logsumexp ? l.outer * l.inner : l.outer * l.extent * l.inner;
}

// The scalar sum_j dy_j y_j(x) of the double reference, for finite differences.
double ref_softmax_dot(SoftmaxOp op, const Layout& l, const std::vector<double>& x, const Vec& dy) {
  double s = 0.0;
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t i = 0; i < l.inner; ++i) {
      if (op == SoftmaxOp::logsumexp) {
        s += dy[static_cast<size_t>(o * l.inner + i)] * ref_softmax(op, l, x, o, 0, i);
        continue;
      }
      for (int64_t e = 0; e < l.extent; ++e)
        s += dy[static_cast<size_t>((o * l.extent + e) * l.inner + i)] *
             ref_softmax(op, l, x, o, e, i);
    }
  return s;
}

// ---- reductions ---------------------------------------------------------------------

TEST(TracedReduce, ForwardOverEveryAxisGroupMatchesTheReference) {
  auto be = make_cpu_backend(0, 2);
  const Vec x = uniform_floats(60, 61, 0, -3.0f, 3.0f);
  const auto xd = widen(x);
  for (const Layout& l : kLayouts)
    for (ReduceOp op : kReduce) {
      Vec y(static_cast<size_t>(l.outer * l.inner), -99.0f);
      be->reduce(op, l.outer, l.extent, l.inner, x.data(), y.data());
      for (int64_t o = 0; o < l.outer; ++o)
        for (int64_t i = 0; i < l.inner; ++i)
          ASSERT_TRUE(testref::close(y[static_cast<size_t>(o * l.inner + i)],
                                     ref_reduce(op, l, xd, o, i), 1e-6, 1e-6))
              << op_name(op) << " " << l.outer << "x" << l.extent << "x" << l.inner;
    }
}

// sum accumulates in double and rounds once: 2^25 ones give 2^25 (a float
// accumulator stalls at 2^24), and a long alternating sum over a strided
// axis (inner = 3, the tiled path) equals the double sum in e order rounded
// to float, bit for bit.
TEST(TracedReduce, SumAccumulatesInDoubleAndRoundsOnce) {
  auto be = make_cpu_backend(0, 2);
  {
    const int64_t n = int64_t{1} << 25;
    const Vec ones(static_cast<size_t>(n), 1.0f);
    Vec y(1, -1.0f);
    be->reduce(ReduceOp::sum, 1, n, 1, ones.data(), y.data());
    EXPECT_EQ(y[0], 33554432.0f);
  }
  const int64_t extent = 200001, inner = 3;
  Vec x(static_cast<size_t>(extent * inner));
  for (int64_t e = 0; e < extent; ++e)
    for (int64_t i = 0; i < inner; ++i)
      x[static_cast<size_t>(e * inner + i)] =
          static_cast<float>((e % 2 == 0 ? 1.0 : -1.0) * (1.0 + 1e-3 * static_cast<double>(e)) +
                             0.1 * static_cast<double>(i));
  Vec y(inner, -1.0f), yt(1, -1.0f);
  be->reduce(ReduceOp::sum, 1, extent, inner, x.data(), y.data());
  for (int64_t i = 0; i < inner; ++i) {
    double s = 0.0;
    for (int64_t e = 0; e < extent; ++e) s += x[static_cast<size_t>(e * inner + i)];
    EXPECT_EQ(y[static_cast<size_t>(i)], static_cast<float>(s)) << "i = " << i;
  }
  // The same axis contiguous (inner = 1: the register path) gives the same bits.
  Vec col(static_cast<size_t>(extent));
  for (int64_t e = 0; e < extent; ++e)
    col[static_cast<size_t>(e)] = x[static_cast<size_t>(e * inner)];
  be->reduce(ReduceOp::sum, 1, extent, 1, col.data(), yt.data());
  EXPECT_EQ(yt[0], y[0]);
}

// Host-side checks: an op value outside its enum and a negative view size
// are internal errors before any work.
TEST(TracedReduce, RejectsUnknownOpsAndNegativeViews) {
  auto be = make_cpu_backend(0, 1);
  Vec x(8, 1.0f), y(8);
  EXPECT_THROW(be->reduce(static_cast<ReduceOp>(kReduceOpCount), 1, 2, 1, x.data(), y.data()),
               Error);
  EXPECT_THROW(be->reduce(ReduceOp::sum, -1, 2, -1, x.data(), y.data()), Error);
  EXPECT_THROW(be->softmax_axis(SoftmaxOp::softmax, 1, -2, 1, x.data(), y.data()), Error);
  EXPECT_THROW(be->softmax_axis_backward(SoftmaxOp::softmax, -1, 2, -1, x.data(), y.data(),
                                         x.data(), y.data()),
               Error);
  EXPECT_THROW(be->reduce_backward(ReduceOp::sum, 1, -2, 1, x.data(), y.data(), x.data(), y.data()),
               Error);
  EXPECT_THROW(be->unary(static_cast<UnaryOp>(-1), 8, x.data(), y.data()), Error);
  EXPECT_THROW(be->unary_backward(static_cast<UnaryOp>(kUnaryOpCount), 8, x.data(), y.data(),
                                  x.data(), y.data()),
               Error);
  EXPECT_THROW(be->softmax_axis_backward(SoftmaxOp::logsumexp, 1, 2, 1, nullptr, y.data(), x.data(),
                                         y.data()),
               Error);
  // softmax / log_softmax backward read no x: null is fine.
  Vec s(2), g{0.5f, -0.25f}, dx(2);
  be->softmax_axis(SoftmaxOp::softmax, 1, 2, 1, x.data(), s.data());
  be->softmax_axis_backward(SoftmaxOp::softmax, 1, 2, 1, nullptr, s.data(), g.data(), dx.data());
  EXPECT_FLOAT_EQ(dx[0], 0.5f * (0.5f - (0.25f - 0.125f)));
}

TEST(TracedReduce, NanAndEmptyAxesFollowTensorFlow) {
  auto be = make_cpu_backend(0, 1);
  const Vec x = {1, kNaN, 3, -kInf, 2, kInf};  // 2 x 3, reduce the rows
  Vec y(2);
  be->reduce(ReduceOp::max, 2, 3, 1, x.data(), y.data());
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], kInf);
  be->reduce(ReduceOp::min, 2, 3, 1, x.data(), y.data());
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], -kInf);
  be->reduce(ReduceOp::sum, 2, 3, 1, x.data(), y.data());
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_TRUE(std::isnan(y[1]));  // -Inf + Inf
  // An empty axis: sum 0, max -Inf, min +Inf (tf.reduce_max of an empty tensor).
  Vec e(3, 5.0f);
  be->reduce(ReduceOp::sum, 1, 0, 3, x.data(), e.data());
  EXPECT_EQ(e, Vec(3, 0.0f));
  be->reduce(ReduceOp::max, 1, 0, 3, x.data(), e.data());
  EXPECT_EQ(e, Vec(3, -kInf));
  be->reduce(ReduceOp::min, 1, 0, 3, x.data(), e.data());
  EXPECT_EQ(e, Vec(3, kInf));
}

TEST(TracedReduce, BackwardSharesTiesAndMatchesFiniteDifferences) {
  auto be = make_cpu_backend(0, 2);
  // Ties: TF's _MinOrMaxGrad splits the gradient equally.
  const Vec t = {3, 1, 3, 2, /* */ 5, 5, 5, 5};
  Vec ty(2), tdx(8);
  const Vec tdy = {2.0f, 1.0f};
  be->reduce(ReduceOp::max, 2, 4, 1, t.data(), ty.data());
  be->reduce_backward(ReduceOp::max, 2, 4, 1, t.data(), ty.data(), tdy.data(), tdx.data());
  EXPECT_EQ(tdx, (Vec{1, 0, 1, 0, 0.25f, 0.25f, 0.25f, 0.25f}));
  be->reduce(ReduceOp::min, 2, 4, 1, t.data(), ty.data());
  be->reduce_backward(ReduceOp::min, 2, 4, 1, t.data(), ty.data(), tdy.data(), tdx.data());
  EXPECT_EQ(tdx, (Vec{0, 2, 0, 0, 0.25f, 0.25f, 0.25f, 0.25f}));
  // A NaN maximum matches no element: 0 / 0 = NaN everywhere (as TF).
  const Vec n = {1, kNaN, 3};
  Vec ny(1), ndx(3);
  be->reduce(ReduceOp::max, 1, 3, 1, n.data(), ny.data());
  be->reduce_backward(ReduceOp::max, 1, 3, 1, n.data(), ny.data(), tdy.data(), ndx.data());
  for (float v : ndx) EXPECT_TRUE(std::isnan(v));
  // Distinct values 0.1 apart (no ties within the f32 difference's step)
  // against finite differences of sum_j dy_j y_j.
  Vec x(60);
  for (size_t k = 0; k < x.size(); ++k) x[k] = -3.0f + 0.1f * static_cast<float>((k * 37) % 60);
  for (const Layout& l : kLayouts)
    for (ReduceOp op : kReduce) {
      const Vec dy = uniform_floats(static_cast<size_t>(l.outer * l.inner), 63, 0, 0.5f, 1.5f);
      Vec y(dy.size()), dx(x.size(), -99.0f);
      be->reduce(op, l.outer, l.extent, l.inner, x.data(), y.data());
      be->reduce_backward(op, l.outer, l.extent, l.inner, x.data(), y.data(), dy.data(), dx.data());
      auto dot = [&](const std::vector<double>& xv) {
        double s = 0.0;
        for (int64_t o = 0; o < l.outer; ++o)
          for (int64_t i = 0; i < l.inner; ++i)
            s += dy[static_cast<size_t>(o * l.inner + i)] * ref_reduce(op, l, xv, o, i);
        return s;
      };
      auto dot32 = [&](const Vec& xv) {
        Vec yv(dy.size());
        be->reduce(op, l.outer, l.extent, l.inner, xv.data(), yv.data());
        double s = 0.0;
        for (size_t j = 0; j < yv.size(); ++j) s += double{dy[j]} * yv[j];
        return s;
      };
      for (size_t k = 0; k < x.size(); ++k) {
        auto xd = widen(x);
        const double fd = testref::central(
            [&](double v) {
              xd[k] = v;
              return dot(xd);
            },
            x[k], 1e-5);
        ASSERT_TRUE(testref::close(dx[k], fd, 2e-5, 2e-6)) << op_name(op) << " dx[" << k << "]";
        Vec xp(x), xm(x);
        xp[k] += 1e-2f;
        xm[k] -= 1e-2f;
        const double fd32 = (dot32(xp) - dot32(xm)) / (double{xp[k]} - xm[k]);
        ASSERT_TRUE(testref::close(dx[k], fd32, 2e-3, 2e-3))
            << op_name(op) << " f32 dx[" << k << "]";
      }
    }
}

// ---- softmax, log_softmax, logsumexp along an axis -------------------------------------

TEST(TracedSoftmax, ForwardOverEveryAxisGroupMatchesTheReference) {
  auto be = make_cpu_backend(0, 2);
  const Vec x = uniform_floats(60, 64, 0, -4.0f, 4.0f);
  const auto xd = widen(x);
  for (const Layout& l : kLayouts)
    for (SoftmaxOp op : kSoftmax) {
      Vec y(static_cast<size_t>(out_size(op, l)));
      be->softmax_axis(op, l.outer, l.extent, l.inner, x.data(), y.data());
      for (int64_t o = 0; o < l.outer; ++o)
        for (int64_t i = 0; i < l.inner; ++i)
          for (int64_t e = 0; e < (op == SoftmaxOp::logsumexp ? 1 : l.extent); ++e) {
            const int64_t j =
                op == SoftmaxOp::logsumexp ? o * l.inner + i : (o * l.extent + e) * l.inner + i;
            ASSERT_TRUE(testref::close(y[static_cast<size_t>(j)], ref_softmax(op, l, xd, o, e, i),
                                       1e-6, 1e-6))
                << op_name(op) << " " << l.outer << "x" << l.extent << "x" << l.inner;
          }
    }
}

TEST(TracedSoftmax, InfinitiesFollowTensorFlow) {
  auto be = make_cpu_backend(0, 1);
  const Vec x = {0.0f, -kInf, 1.0f, /* */ -kInf, -kInf, -kInf, /* */ kInf, 0.0f, 1.0f};
  Vec y(9), l(3);
  be->softmax_axis(SoftmaxOp::softmax, 3, 3, 1, x.data(), y.data());
  EXPECT_FLOAT_EQ(y[0], 1.0f / (1.0f + std::exp(1.0f)));
  EXPECT_EQ(y[1], 0.0f);
  for (int k = 3; k < 9; ++k) EXPECT_TRUE(std::isnan(y[k])) << k;  // infinite max: NaN (TF)
  be->softmax_axis(SoftmaxOp::logsumexp, 3, 3, 1, x.data(), l.data());
  EXPECT_FLOAT_EQ(l[0], std::log(1.0f + std::exp(1.0f)));
  EXPECT_EQ(l[1], -kInf);  // tf.reduce_logsumexp shifts by 0 when the max is not finite
  EXPECT_EQ(l[2], kInf);
  Vec e(2, 5.0f);
  be->softmax_axis(SoftmaxOp::logsumexp, 2, 0, 1, x.data(), e.data());
  EXPECT_EQ(e, Vec(2, -kInf));
}

// log_softmax with +-Inf: a -Inf entry gives -Inf and takes no share of the
// gradient; an axis with an infinite maximum is NaN (TF's log_softmax); the
// backward is dy - exp(y) sum dy, TF's LogSoftmaxGrad.
TEST(TracedSoftmax, LogSoftmaxInfinitiesForwardAndBackward) {
  auto be = make_cpu_backend(0, 1);
  const Vec x = {0.0f, -kInf, 1.0f, /* */ -kInf, -kInf, -kInf, /* */ kInf, 0.0f, 1.0f};
  Vec y(9);
  be->softmax_axis(SoftmaxOp::log_softmax, 3, 3, 1, x.data(), y.data());
  const double ls = std::log(1.0 + std::exp(-1.0));  // shift by the maximum 1
  EXPECT_FLOAT_EQ(y[0], static_cast<float>(-1.0 - ls));
  EXPECT_EQ(y[1], -kInf);
  EXPECT_FLOAT_EQ(y[2], static_cast<float>(-ls));
  for (int k = 3; k < 9; ++k) EXPECT_TRUE(std::isnan(y[k])) << k;
  const Vec dy = {1.0f, 2.0f, 3.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
  Vec dx(9);
  be->softmax_axis_backward(SoftmaxOp::log_softmax, 3, 3, 1, nullptr, y.data(), dy.data(),
                            dx.data());
  const double p0 = std::exp(-1.0 - ls), p2 = std::exp(-ls);
  EXPECT_FLOAT_EQ(dx[0], static_cast<float>(1.0 - 6.0 * p0));
  EXPECT_EQ(dx[1], 2.0f);  // exp(-Inf) = 0: dy passes unchanged
  EXPECT_FLOAT_EQ(dx[2], static_cast<float>(3.0 - 6.0 * p2));
  for (int k = 3; k < 9; ++k) EXPECT_TRUE(std::isnan(dx[k])) << k;
}

TEST(TracedSoftmax, BackwardMatchesFiniteDifferences) {
  auto be = make_cpu_backend(0, 2);
  const Vec x = uniform_floats(60, 65, 0, -2.0f, 2.0f);
  for (const Layout& l : kLayouts)
    for (SoftmaxOp op : kSoftmax) {
      const auto n = static_cast<size_t>(out_size(op, l));
      const Vec dy = uniform_floats(n, 66, 0, -1.0f, 1.0f);
      Vec y(n), dx(x.size());
      be->softmax_axis(op, l.outer, l.extent, l.inner, x.data(), y.data());
      be->softmax_axis_backward(op, l.outer, l.extent, l.inner, x.data(), y.data(), dy.data(),
                                dx.data());
      auto dot32 = [&](const Vec& xv) {
        Vec yv(n);
        be->softmax_axis(op, l.outer, l.extent, l.inner, xv.data(), yv.data());
        double s = 0.0;
        for (size_t j = 0; j < n; ++j) s += double{dy[j]} * yv[j];
        return s;
      };
      for (size_t k = 0; k < x.size(); ++k) {
        auto xd = widen(x);
        const double fd = testref::central(
            [&](double v) {
              xd[k] = v;
              return ref_softmax_dot(op, l, xd, dy);
            },
            x[k], 1e-5);
        ASSERT_TRUE(testref::close(dx[k], fd, 2e-5, 2e-6)) << op_name(op) << " dx[" << k << "]";
        Vec xp(x), xm(x);
        xp[k] += 1e-2f;
        xm[k] -= 1e-2f;
        const double fd32 = (dot32(xp) - dot32(xm)) / (double{xp[k]} - xm[k]);
        ASSERT_TRUE(testref::close(dx[k], fd32, 2e-3, 2e-3))
            << op_name(op) << " f32 dx[" << k << "]";
      }
    }
}

// ---- thread counts ------------------------------------------------------------------

TEST(TracedThreads, ReductionsAreBitIdenticalOnOneAndTwoThreads) {
  auto one = make_cpu_backend(0, 1), two = make_cpu_backend(1, 2);
  const Layout big[] = {{1, 300, 200}, {40, 50, 30}, {2000, 30, 1}};
  const Vec x = uniform_floats(60000, 67, 0, -3.0f, 3.0f);
  auto same = [](const Vec& a, const Vec& b) {
    return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  for (const Layout& l : big) {
    ASSERT_EQ(l.outer * l.extent * l.inner, 60000);
    const auto n = static_cast<size_t>(l.outer * l.inner);
    const Vec dy = uniform_floats(n, 68);
    for (ReduceOp op : kReduce) {
      Vec y1(n), y2(n), d1(x.size()), d2(x.size());
      one->reduce(op, l.outer, l.extent, l.inner, x.data(), y1.data());
      two->reduce(op, l.outer, l.extent, l.inner, x.data(), y2.data());
      one->reduce_backward(op, l.outer, l.extent, l.inner, x.data(), y1.data(), dy.data(),
                           d1.data());
      two->reduce_backward(op, l.outer, l.extent, l.inner, x.data(), y2.data(), dy.data(),
                           d2.data());
      EXPECT_TRUE(same(y1, y2) && same(d1, d2)) << op_name(op) << " " << l.outer;
    }
    for (SoftmaxOp op : kSoftmax) {
      const auto m = static_cast<size_t>(out_size(op, l));
      const Vec g = uniform_floats(m, 69);
      Vec y1(m), y2(m), d1(x.size()), d2(x.size());
      one->softmax_axis(op, l.outer, l.extent, l.inner, x.data(), y1.data());
      two->softmax_axis(op, l.outer, l.extent, l.inner, x.data(), y2.data());
      one->softmax_axis_backward(op, l.outer, l.extent, l.inner, x.data(), y1.data(), g.data(),
                                 d1.data());
      two->softmax_axis_backward(op, l.outer, l.extent, l.inner, x.data(), y2.data(), g.data(),
                                 d2.data());
      EXPECT_TRUE(same(y1, y2) && same(d1, d2)) << op_name(op) << " " << l.outer;
    }
  }
}

}  // namespace
}  // namespace mr
