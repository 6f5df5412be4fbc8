// The element-wise and broadcasting ops of traced graphs on the CPU
// (Backend::unary, binary, where and their backward; make_broadcast and
// sum_to_operand) against double-precision references (tests/traced_ops_ref.h),
// TensorFlow's edge values, and finite differences. Reductions and the softmax
// family: test_traced_reduce.cpp.
//
// Tolerances (f32 kernels):
// - forward against the double reference: 4e-6 relative + 1e-6 absolute (a
//   few ulp of libm's float functions);
// - gradient against a central difference of the double reference (step 1e-5,
//   error ~1e-10): 2e-5 relative + 2e-6 absolute;
// - gradient against a central difference of the f32 forward op itself (step
//   1e-2: truncation ~h^2 f'''/6 ~ 2e-5 |f'''|, rounding ~eps |f| / h ~ 1e-5
//   |f|): 2e-3 relative + 2e-3 absolute.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
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

const std::vector<UnaryOp> kUnary = testref::all_unary_ops();
const std::vector<BinaryOp> kBinary = testref::all_binary_ops();

// Random points of op's smooth domain, away from kinks (0 for abs, sign,
// relu) and from the edges of sqrt / log / log1p.
Vec unary_points(UnaryOp op, size_t n, uint32_t stream) {
  float lo = -3.0f, hi = 3.0f;
  // (log''' = 2 / x^3 bounds the f32 difference's truncation error.)
  if (op == UnaryOp::sqrt || op == UnaryOp::log) lo = 0.25f;
  if (op == UnaryOp::log1p) lo = -0.75f;
  Vec x = uniform_floats(n, 15, stream, lo, hi);
  const bool kink = op == UnaryOp::abs || op == UnaryOp::sign || op == UnaryOp::relu;
  for (float& v : x)
    if (kink && std::fabs(v) < 0.05f) v = v < 0 ? -0.5f : 0.5f;
  return x;
}

std::unique_ptr<Backend> cpu(int threads = 2) { return make_cpu_backend(0, threads); }

Vec run_unary(Backend& be, UnaryOp op, const Vec& x) {
  Vec y(x.size());
  be.unary(op, static_cast<int64_t>(x.size()), x.data(), y.data());
  return y;
}

// ---- names and broadcasting -------------------------------------------------------

TEST(TracedOpKinds, NamesAreKerasNames) {
  EXPECT_STREQ(op_name(UnaryOp::gelu_tanh), "gelu_tanh");
  EXPECT_STREQ(op_name(UnaryOp::log1p), "log1p");
  EXPECT_STREQ(op_name(BinaryOp::greater_equal), "greater_equal");
  EXPECT_STREQ(op_name(ReduceOp::max), "max");
  EXPECT_STREQ(op_name(SoftmaxOp::log_softmax), "log_softmax");
  EXPECT_TRUE(is_comparison(BinaryOp::equal));
  EXPECT_FALSE(is_comparison(BinaryOp::minimum));
}

TEST(TracedBroadcast, SameShapeIsOneFlatAxis) {
  const Broadcast g = make_broadcast({Shape{2, 3, 4}, Shape{2, 3, 4}});
  EXPECT_EQ(g.rank, 1);
  EXPECT_EQ(g.size, 24);
  EXPECT_EQ(g.dims[0], 24);
  EXPECT_EQ(g.stride[0][0], 1);
  EXPECT_EQ(g.stride[1][0], 1);
}

TEST(TracedBroadcast, ScalarWithTensorOnEitherSide) {
  for (int side = 0; side < 2; ++side) {
    const std::vector<Shape> ops = side == 0 ? std::vector<Shape>{Shape{}, Shape{5, 6}}
                                             : std::vector<Shape>{Shape{5, 6}, Shape{1}};
    const Broadcast g = make_broadcast(ops);
    EXPECT_EQ(g.rank, 1);
    EXPECT_EQ(g.dims[0], 30);
    EXPECT_EQ(g.stride[side][0], 0);
    EXPECT_EQ(g.stride[1 - side][0], 1);
  }
  const Broadcast s = make_broadcast({Shape{}, Shape{1, 1}});  // one element
  EXPECT_EQ(s.rank, 0);
  EXPECT_EQ(s.size, 1);
}

TEST(TracedBroadcast, StretchesOnesAndMergesAxes) {
  EXPECT_EQ(broadcast_shape({Shape{3, 1, 4}, Shape{5, 1}}), (Shape{3, 5, 4}));
  const Broadcast g = make_broadcast({Shape{3, 1, 4}, Shape{5, 1}});
  ASSERT_EQ(g.rank, 3);
  EXPECT_EQ(g.dims[0], 3);
  EXPECT_EQ(g.dims[1], 5);
  EXPECT_EQ(g.dims[2], 4);
  const int64_t a[] = {4, 0, 1}, b[] = {0, 1, 0};
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(g.stride[0][j], a[j]);
    EXPECT_EQ(g.stride[1][j], b[j]);
  }
  // (2, 3, 4) with (4): the two leading axes merge.
  const Broadcast h = make_broadcast({Shape{2, 3, 4}, Shape{4}});
  ASSERT_EQ(h.rank, 2);
  EXPECT_EQ(h.dims[0], 6);
  EXPECT_EQ(h.stride[0][0], 4);
  EXPECT_EQ(h.stride[1][0], 0);
  EXPECT_EQ(broadcast_shape({Shape{0, 3}, Shape{1, 3}}), (Shape{0, 3}));
  EXPECT_TRUE(operand_spans_out(h, 0));
  EXPECT_FALSE(operand_spans_out(h, 1));
  EXPECT_FALSE(operand_spans_out(g, 0));
  EXPECT_TRUE(operand_spans_out(make_broadcast({Shape{1, 6}, Shape{6}}), 0));
}

TEST(TracedBroadcast, MismatchesAreShapeErrorsNamingBothShapes) {
  try {
    make_broadcast({Shape{2, 3}, Shape{4}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::shape);
    const std::string m = e.what();
    EXPECT_NE(m.find("(2, 3)"), std::string::npos) << m;
    EXPECT_NE(m.find("(4,)"), std::string::npos) << m;
  }
  EXPECT_THROW(make_broadcast({Shape{2}, Shape{1}, Shape{1}, Shape{2}}), Error);
  EXPECT_THROW(make_broadcast({}), Error);
  // Alternating broadcast patterns that need more than kMaxStridedRank axes.
  EXPECT_THROW(make_broadcast({Shape{2, 1, 2, 1, 2, 1, 2, 1, 2}, Shape{2, 1, 2, 1, 2, 1, 2, 1}}),
               Error);
}

// ---- unary ops --------------------------------------------------------------------

TEST(TracedUnary, ForwardMatchesTheDoubleReference) {
  auto be = cpu();
  for (UnaryOp op : kUnary) {
    const Vec x = unary_points(op, 4000, static_cast<uint32_t>(op));
    const Vec y = run_unary(*be, op, x);
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_TRUE(testref::close(y[i], testref::unary(op, x[i]), 4e-6, 1e-6))
          << op_name(op) << "(" << x[i] << ") = " << y[i];
  }
}

TEST(TracedUnary, EdgeValuesAreTensorFlows) {
  auto be = cpu();
  const Vec x = {0.0f, -0.0f, -1.0f, -2.0f, kInf, -kInf, kNaN, 1e30f, -1e30f};
  for (UnaryOp op : kUnary) {
    const Vec y = run_unary(*be, op, x);
    for (size_t i = 0; i < x.size(); ++i) {
      // TF's formulas, literally: gelu and silu of -Inf are -Inf * 0 = NaN.
      double want = testref::unary(op, x[i]);
      if (std::fabs(want) > 3.4e38 && !std::isinf(want)) want = want > 0 ? kInf : -kInf;
      EXPECT_TRUE(testref::close(y[i], want, 4e-6, 1e-6))
          << op_name(op) << "(" << x[i] << ") = " << y[i] << ", expected " << want;
    }
  }
  // Spelled out: TF's sign(NaN) = NaN, sign(-0) = +0, log1p(-1) = -Inf.
  const Vec s = run_unary(*be, UnaryOp::sign, {kNaN, -0.0f});
  EXPECT_TRUE(std::isnan(s[0]));
  EXPECT_FALSE(std::signbit(s[1]));
  EXPECT_EQ(run_unary(*be, UnaryOp::log1p, {-1.0f})[0], -kInf);
  EXPECT_TRUE(std::isnan(run_unary(*be, UnaryOp::relu, {kNaN})[0]));
  // gelu_erf keeps the far negative tail as TF's erfc form does:
  // gelu(-10) = -7.6e-23, where 0.5 x (1 + erf(x / sqrt(2))) rounds to 0.
  const float tail = run_unary(*be, UnaryOp::gelu_erf, {-10.0f})[0];
  EXPECT_NEAR(tail / testref::unary(UnaryOp::gelu_erf, -10.0), 1.0, 1e-5) << tail;
}

TEST(TracedUnary, GradientsMatchFiniteDifferences) {
  auto be = cpu();
  for (UnaryOp op : kUnary) {
    const Vec x = unary_points(op, 500, 100 + static_cast<uint32_t>(op));
    const Vec dy = uniform_floats(x.size(), 16, static_cast<uint32_t>(op), 0.5f, 1.5f);
    const Vec y = run_unary(*be, op, x);
    Vec dx(x.size());
    be->unary_backward(op, static_cast<int64_t>(x.size()), x.data(), y.data(), dy.data(),
                       dx.data());
    // Against the double reference's central difference.
    for (size_t i = 0; i < x.size(); ++i) {
      const double fd =
          testref::central([&](double v) { return testref::unary(op, v); }, x[i], 1e-5);
      ASSERT_TRUE(testref::close(dx[i], dy[i] * fd, 2e-5, 2e-6))
          << op_name(op) << "'(" << x[i] << "): " << dx[i] << " vs " << dy[i] * fd;
    }
    // Against the f32 forward op's own central difference, step 1e-2.
    Vec xp(x), xm(x);
    for (size_t i = 0; i < x.size(); ++i) {
      xp[i] = x[i] + 1e-2f;
      xm[i] = x[i] - 1e-2f;
    }
    const Vec yp = run_unary(*be, op, xp), ym = run_unary(*be, op, xm);
    for (size_t i = 0; i < x.size(); ++i) {
      const double fd = (double{yp[i]} - ym[i]) / (double{xp[i]} - xm[i]);
      ASSERT_TRUE(testref::close(dx[i], dy[i] * fd, 2e-3, 2e-3))
          << op_name(op) << "'(" << x[i] << ") f32: " << dx[i] << " vs " << dy[i] * fd;
    }
  }
}

TEST(TracedUnary, GradientEdgesAreTensorFlows) {
  auto be = cpu();
  auto grad = [&](UnaryOp op, float x) {
    float y = 0, dx = 0;
    const float dy = 1.0f;
    be->unary(op, 1, &x, &y);
    be->unary_backward(op, 1, &x, &y, &dy, &dx);
    return dx;
  };
  EXPECT_EQ(grad(UnaryOp::sqrt, 0.0f), kInf);  // TF's SqrtGrad: 0.5 / 0
  EXPECT_EQ(grad(UnaryOp::abs, 0.0f), 0.0f);
  EXPECT_TRUE(std::isnan(grad(UnaryOp::abs, kNaN)));
  EXPECT_EQ(grad(UnaryOp::sign, 0.7f), 0.0f);
  EXPECT_EQ(grad(UnaryOp::sign, kNaN), 0.0f);
  EXPECT_EQ(grad(UnaryOp::relu, 0.0f), 0.0f);
  EXPECT_EQ(grad(UnaryOp::relu, kNaN), 0.0f);
  EXPECT_EQ(grad(UnaryOp::log, 0.0f), kInf);
  EXPECT_EQ(grad(UnaryOp::log1p, -1.0f), kInf);
  EXPECT_EQ(grad(UnaryOp::log1p, -2.0f), -1.0f);
  EXPECT_EQ(grad(UnaryOp::negative, 3.0f), -1.0f);
  EXPECT_EQ(grad(UnaryOp::sigmoid, -kInf), 0.0f);
}

// ---- binary ops under broadcasting --------------------------------------------------

struct Case {
  Shape a, b;
};
const Case kCases[] = {{Shape{2, 3, 4}, Shape{2, 3, 4}}, {Shape{}, Shape{3, 4}},
                       {Shape{3, 4}, Shape{}},           {Shape{3, 1, 4}, Shape{5, 1}},
                       {Shape{2, 3, 4}, Shape{4}},       {Shape{4}, Shape{2, 3, 4}},
                       {Shape{2, 1, 3}, Shape{1, 4, 1}}, {Shape{}, Shape{}},
                       {Shape{1, 1}, Shape{1}},          {Shape{2, 1, 3}, Shape{2, 0, 3}}};

// Operand values of op's smooth domain: power takes a in [0.5, 2), divide
// |b| in [0.5, 2), maximum / minimum keep |a - b| >= 0.05 (no ties).
void binary_points(BinaryOp op, Vec& a, Vec& b, uint32_t stream) {
  a = uniform_floats(a.size(), 21, stream, -2.0f, 2.0f);
  b = uniform_floats(b.size(), 22, stream, -2.0f, 2.0f);
  if (op == BinaryOp::power)
    for (float& v : a) v = 0.5f + std::fabs(v) * 0.75f;
  if (op == BinaryOp::divide)
    for (float& v : b) v = (v < 0 ? -0.5f : 0.5f) + v * 0.75f;
  if (op == BinaryOp::maximum || op == BinaryOp::minimum) {  // |a - b| >= 0.125
    for (float& v : a) v = std::round(v * 4.0f) / 4.0f;
    for (float& v : b) v = std::round(v * 4.0f) / 4.0f + 0.125f;
  }
}

TEST(TracedBinary, ForwardUnderBroadcastingMatchesTheReference) {
  auto be = cpu();
  for (const Case& c : kCases) {
    const Broadcast g = make_broadcast({c.a, c.b});
    const Shape out = broadcast_shape({c.a, c.b});
    for (BinaryOp op : kBinary) {
      Vec a(static_cast<size_t>(c.a.numel())), b(static_cast<size_t>(c.b.numel()));
      binary_points(op, a, b, static_cast<uint32_t>(op));
      if (is_comparison(op))  // equal values happen
        for (size_t i = 0; i < b.size(); i += 3) b[i] = a[i % a.size()];
      Vec y(static_cast<size_t>(g.size));
      be->binary(op, g, a.data(), b.data(), y.data());
      for (int64_t e = 0; e < g.size; ++e) {
        const double want = testref::binary(op, a[testref::operand_index(out, c.a, e)],
                                            b[testref::operand_index(out, c.b, e)]);
        ASSERT_TRUE(testref::close(y[e], want, 4e-6, 1e-6))
            << op_name(op) << " " << c.a.str() << " " << c.b.str() << " at " << e;
      }
    }
  }
}

TEST(TracedBinary, EdgeValuesAreTensorFlows) {
  auto be = cpu();
  const Vec a = {-2.0f, 0.0f, 2.0f, 0.0f, -1.0f, kNaN, 1.0f, 1.0f, 0.0f};
  const Vec b = {2.0f, 2.0f, 0.5f, 0.0f, 0.5f, 1.0f, kNaN, 0.0f, -1.0f};
  const Broadcast g = make_broadcast({Shape{9}, Shape{9}});
  Vec y(9), ga(9), gb(9), one(9, 1.0f);
  be->binary(BinaryOp::power, g, a.data(), b.data(), y.data());
  be->binary_backward(BinaryOp::power, g, a.data(), b.data(), one.data(), ga.data(), gb.data());
  // TF's pow and _PowGrad (checked with tf.GradientTape on TF 2).
  const float want_y[] = {4, 0, std::sqrt(2.0f), 1, kNaN, kNaN, 1, 1, kInf};
  const float want_ga[] = {-4, 0, 0.5f / std::sqrt(2.0f), kNaN, kNaN, 1, kNaN, 0, -kInf};
  const float want_gb[] = {0, 0, std::sqrt(2.0f) * std::log(2.0f), 0, kNaN, kNaN, 0, 0, kNaN};
  for (int i = 0; i < 9; ++i) {
    EXPECT_TRUE(testref::close(y[i], want_y[i], 1e-6, 0)) << i << ": " << y[i];
    EXPECT_TRUE(testref::close(ga[i], want_ga[i], 1e-6, 0)) << i << ": " << ga[i];
    EXPECT_TRUE(testref::close(gb[i], want_gb[i], 1e-6, 0)) << i << ": " << gb[i];
  }
  // maximum / minimum: NaN out; a takes the gradient on a tie, b when either is NaN.
  const Vec p = {1, 2, kNaN, 3, kNaN}, q = {1, 1, 1, kNaN, kNaN};
  const Broadcast h = make_broadcast({Shape{5}, Shape{5}});
  Vec m(5), gp(5), gq(5), ones(5, 1.0f);
  be->binary(BinaryOp::maximum, h, p.data(), q.data(), m.data());
  be->binary_backward(BinaryOp::maximum, h, p.data(), q.data(), ones.data(), gp.data(), gq.data());
  const float want_m[] = {1, 2, kNaN, kNaN, kNaN}, want_gp[] = {1, 1, 0, 0, 0};
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(testref::close(m[i], want_m[i], 0, 0)) << i;
    EXPECT_EQ(gp[i], want_gp[i]) << i;
    EXPECT_EQ(gq[i], 1 - want_gp[i]) << i;
  }
  be->binary_backward(BinaryOp::minimum, h, p.data(), q.data(), ones.data(), gp.data(), gq.data());
  const float want_min_gp[] = {1, 0, 0, 0, 0};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(gp[i], want_min_gp[i]) << i;
  // Comparisons: 1 / 0, NaN false except not_equal; no gradient.
  be->binary(BinaryOp::not_equal, h, p.data(), q.data(), m.data());
  EXPECT_EQ(m, (Vec{0, 1, 1, 1, 1}));
  be->binary(BinaryOp::greater_equal, h, p.data(), q.data(), m.data());
  EXPECT_EQ(m, (Vec{1, 1, 0, 0, 0}));
  be->binary_backward(BinaryOp::less, h, p.data(), q.data(), ones.data(), gp.data(), gq.data());
  EXPECT_EQ(gp, Vec(5, 0.0f));
  EXPECT_EQ(gq, Vec(5, 0.0f));
  // Division by zero: +-Inf and NaN as IEEE.
  const Vec u = {1, -1, 0}, z = {0, 0, 0};
  const Broadcast k = make_broadcast({Shape{3}, Shape{3}});
  Vec d(3);
  be->binary(BinaryOp::divide, k, u.data(), z.data(), d.data());
  EXPECT_EQ(d[0], kInf);
  EXPECT_EQ(d[1], -kInf);
  EXPECT_TRUE(std::isnan(d[2]));
}

// The out-shaped partials against finite differences, and their reduction to
// each operand's shape through sum_to_operand against a hand loop.
TEST(TracedBinary, BroadcastVjpMatchesFiniteDifferencesAndHandSums) {
  auto be = cpu();
  for (const Case& c : kCases) {
    const Broadcast g = make_broadcast({c.a, c.b});
    const Shape out = broadcast_shape({c.a, c.b});
    for (BinaryOp op : kBinary) {
      Vec a(static_cast<size_t>(c.a.numel())), b(static_cast<size_t>(c.b.numel()));
      binary_points(op, a, b, 40 + static_cast<uint32_t>(op));
      const Vec dout = uniform_floats(static_cast<size_t>(g.size), 23, 0, 0.5f, 1.5f);
      Vec pa(dout.size()), pb(dout.size());
      be->binary_backward(op, g, a.data(), b.data(), dout.data(), pa.data(), pb.data());
      std::vector<double> ra(a.size(), 0.0), rb(b.size(), 0.0);
      for (int64_t e = 0; e < g.size; ++e) {
        const int64_t ia = testref::operand_index(out, c.a, e);
        const int64_t ib = testref::operand_index(out, c.b, e);
        const double av = a[ia], bv = b[ib];
        double fa =
            testref::central([&](double v) { return testref::binary(op, v, bv); }, av, 1e-5);
        double fb =
            testref::central([&](double v) { return testref::binary(op, av, v); }, bv, 1e-5);
        if (is_comparison(op)) fa = fb = 0.0;  // no gradient (the difference is not one)
        ASSERT_TRUE(testref::close(pa[e], dout[e] * fa, 2e-5, 2e-6))
            << op_name(op) << " d/da " << c.a.str() << " " << c.b.str() << " at " << e;
        ASSERT_TRUE(testref::close(pb[e], dout[e] * fb, 2e-5, 2e-6))
            << op_name(op) << " d/db " << c.a.str() << " " << c.b.str() << " at " << e;
        ra[ia] += pa[e];
        rb[ib] += pb[e];
      }
      Vec sa(a.size(), -7.0f), sb(b.size(), -7.0f);
      be->strided_copy(sum_to_operand(g, 0), pa.data(), sa.data());
      be->strided_copy(sum_to_operand(g, 1), pb.data(), sb.data());
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_TRUE(testref::close(sa[i], ra[i], 1e-5, 1e-5)) << op_name(op) << " a[" << i << "]";
      for (size_t i = 0; i < b.size(); ++i)
        ASSERT_TRUE(testref::close(sb[i], rb[i], 1e-5, 1e-5)) << op_name(op) << " b[" << i << "]";
    }
  }
}

// The reduced gradients (binary_backward, then sum_to_operand) against a
// central difference of the f32 forward op itself: L = sum_e dout[e] out[e]
// (in double) with one operand element moved by +-1e-2 (tolerance: 2e-3
// relative + 2e-3 absolute, as the unary ops').
TEST(TracedBinary, ReducedVjpMatchesFiniteDifferencesOfTheF32Op) {
  auto be = cpu();
  for (const Case& c : kCases) {
    const Broadcast g = make_broadcast({c.a, c.b});
    for (BinaryOp op : kBinary) {
      if (is_comparison(op)) continue;
      Vec a(static_cast<size_t>(c.a.numel())), b(static_cast<size_t>(c.b.numel()));
      binary_points(op, a, b, 60 + static_cast<uint32_t>(op));
      const Vec dout = uniform_floats(static_cast<size_t>(g.size), 24, 0, 0.5f, 1.5f);
      Vec pa(dout.size()), pb(dout.size()), sa(a.size(), -7.0f), sb(b.size(), -7.0f);
      be->binary_backward(op, g, a.data(), b.data(), dout.data(), pa.data(), pb.data());
      be->strided_copy(sum_to_operand(g, 0), pa.data(), sa.data());
      be->strided_copy(sum_to_operand(g, 1), pb.data(), sb.data());
      Vec y(dout.size());
      auto loss = [&](const Vec& av, const Vec& bv) {
        be->binary(op, g, av.data(), bv.data(), y.data());
        double l = 0.0;
        for (size_t e = 0; e < y.size(); ++e) l += double{dout[e]} * y[e];
        return l;
      };
      for (int k = 0; k < 2; ++k) {
        Vec& v = k == 0 ? a : b;
        const Vec& got = k == 0 ? sa : sb;
        for (size_t i = 0; i < v.size(); ++i) {
          const float v0 = v[i];
          Vec vp = v, vm = v;
          vp[i] = v0 + 1e-2f;
          vm[i] = v0 - 1e-2f;
          const double lp = k == 0 ? loss(vp, b) : loss(a, vp);
          const double lm = k == 0 ? loss(vm, b) : loss(a, vm);
          const double fd = (lp - lm) / (double{vp[i]} - vm[i]);
          ASSERT_TRUE(testref::close(got[i], fd, 2e-3, 2e-3))
              << op_name(op) << " operand " << k << " " << c.a.str() << " " << c.b.str() << " ["
              << i << "]: " << got[i] << " vs " << fd;
        }
      }
    }
  }
}

TEST(TracedBinary, NullPartialsAreNotWrittenAndEmptyOutsZeroTheOperand) {
  auto be = cpu();
  const Broadcast g = make_broadcast({Shape{4}, Shape{}});
  const Vec a = {1, 2, 3, 4}, b = {2}, dout = {1, 1, 1, 1};
  Vec gb(4, 5.0f);
  be->binary_backward(BinaryOp::multiply, g, a.data(), b.data(), dout.data(), nullptr, gb.data());
  EXPECT_EQ(gb, (Vec{1, 2, 3, 4}));
  // (1, 3) against (0, 3): nothing to compute, the (1, 3) operand's gradient is 0.
  const Broadcast e = make_broadcast({Shape{0, 3}, Shape{1, 3}});
  EXPECT_EQ(e.size, 0);
  Vec s(3, 9.0f);
  be->strided_copy(sum_to_operand(e, 1), dout.data(), s.data());
  EXPECT_EQ(s, Vec(3, 0.0f));
}

// ---- where --------------------------------------------------------------------------

TEST(TracedWhere, ThreeOperandBroadcastPicksAndRoutesGradients) {
  auto be = cpu();
  const Shape sc{3, 1}, sa{1, 4}, sb{};
  const Broadcast g = make_broadcast({sc, sa, sb});
  const Shape out = broadcast_shape({sc, sa, sb});
  ASSERT_EQ(out, (Shape{3, 4}));
  const Vec cond = {1.0f, 0.0f, kNaN};  // NaN counts as true (TF / numpy cast to bool)
  const Vec a = {10, 11, 12, 13}, b = {-1};
  Vec y(12);
  be->where(g, cond.data(), a.data(), b.data(), y.data());
  const Vec want = {10, 11, 12, 13, -1, -1, -1, -1, 10, 11, 12, 13};
  EXPECT_EQ(y, want);
  const Vec dout = uniform_floats(12, 31, 0, 0.5f, 1.5f);
  Vec pa(12), pb(12);
  be->where_backward(g, cond.data(), dout.data(), pa.data(), pb.data());
  Vec ga(4), gb(1);
  be->strided_copy(sum_to_operand(g, 1), pa.data(), ga.data());
  be->strided_copy(sum_to_operand(g, 2), pb.data(), gb.data());
  for (int j = 0; j < 4; ++j) EXPECT_FLOAT_EQ(ga[j], dout[j] + dout[8 + j]) << j;
  EXPECT_FLOAT_EQ(gb[0], dout[4] + dout[5] + dout[6] + dout[7]);
  for (int e = 0; e < 12; ++e) EXPECT_EQ(pa[e] + pb[e], dout[e]) << e;
}

// ---- thread counts ------------------------------------------------------------------

TEST(TracedThreads, ElementwiseResultsAreBitIdenticalOnOneAndTwoThreads) {
  auto one = cpu(1), two = cpu(2);
  // 60001 elements (odd: the two-thread split lands on an odd index and
  // cuts a last-axis row); b broadcast along the first and last axes.
  const Shape sa{29, 1, 2069}, sb{1, 2069};  // 29 * 2069 = 60001
  const Broadcast g = make_broadcast({sa, sb});
  Vec a = uniform_floats(static_cast<size_t>(sa.numel()), 51, 0, 0.5f, 2.0f);
  Vec b = uniform_floats(static_cast<size_t>(sb.numel()), 52, 0, 0.5f, 2.0f);
  const Vec dout = uniform_floats(static_cast<size_t>(g.size), 53);
  auto same = [](const Vec& x, const Vec& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
  };
  for (UnaryOp op : kUnary) {
    Vec y1(a.size()), y2(a.size()), d1(a.size()), d2(a.size());
    one->unary(op, static_cast<int64_t>(a.size()), a.data(), y1.data());
    two->unary(op, static_cast<int64_t>(a.size()), a.data(), y2.data());
    one->unary_backward(op, static_cast<int64_t>(a.size()), a.data(), y1.data(), dout.data(),
                        d1.data());
    two->unary_backward(op, static_cast<int64_t>(a.size()), a.data(), y2.data(), dout.data(),
                        d2.data());
    EXPECT_TRUE(same(y1, y2) && same(d1, d2)) << op_name(op);
  }
  for (BinaryOp op : kBinary) {
    Vec y1(dout.size()), y2(dout.size()), a1(dout.size()), a2(dout.size()), b1(dout.size()),
        b2(dout.size());
    one->binary(op, g, a.data(), b.data(), y1.data());
    two->binary(op, g, a.data(), b.data(), y2.data());
    one->binary_backward(op, g, a.data(), b.data(), dout.data(), a1.data(), b1.data());
    two->binary_backward(op, g, a.data(), b.data(), dout.data(), a2.data(), b2.data());
    EXPECT_TRUE(same(y1, y2) && same(a1, a2) && same(b1, b2)) << op_name(op);
  }
  // where over three operand shapes, NaN and zero conditions included.
  const Shape sc{29, 1, 1};
  Vec cond = uniform_floats(29, 54, 0, -1.0f, 1.0f);
  cond[3] = 0.0f;
  cond[5] = kNaN;
  const Broadcast w = make_broadcast({sc, sa, sb});
  ASSERT_EQ(w.size, 60001);
  Vec y1(dout.size()), y2(dout.size()), a1(dout.size()), a2(dout.size()), b1(dout.size()),
      b2(dout.size());
  one->where(w, cond.data(), a.data(), b.data(), y1.data());
  two->where(w, cond.data(), a.data(), b.data(), y2.data());
  one->where_backward(w, cond.data(), dout.data(), a1.data(), b1.data());
  two->where_backward(w, cond.data(), dout.data(), a2.data(), b2.data());
  EXPECT_TRUE(same(y1, y2) && same(a1, a2) && same(b1, b2)) << "where";
}

}  // namespace
}  // namespace mr
