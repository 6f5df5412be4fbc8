// Double-precision references of the traced-graph ops (core/op_kinds.h) for
// the tests: written from the definitions (TensorFlow's values), not from
// backends/common/op_math.h, so that the kernels are checked against an
// independent formula.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/op_kinds.h"
#include "core/shape.h"

namespace mr {
namespace testref {

constexpr double kPi = 3.14159265358979323846;

// Every kind, in enum order (op_kinds.h ties the counts to the last
// enumerators, so a kind added there is tested everywhere these are used).
inline std::vector<UnaryOp> all_unary_ops() {
  std::vector<UnaryOp> v;
  for (int k = 0; k < kUnaryOpCount; ++k) v.push_back(static_cast<UnaryOp>(k));
  return v;
}
inline std::vector<BinaryOp> all_binary_ops() {
  std::vector<BinaryOp> v;
  for (int k = 0; k < kBinaryOpCount; ++k) v.push_back(static_cast<BinaryOp>(k));
  return v;
}

inline double unary(UnaryOp op, double x) {
  switch (op) {
    case UnaryOp::negative:
      return -x;
    case UnaryOp::abs:
      return std::fabs(x);
    case UnaryOp::sign:
      return std::isnan(x) ? x : (x > 0) - (x < 0);
    case UnaryOp::square:
      return x * x;
    case UnaryOp::sqrt:
      return std::sqrt(x);
    case UnaryOp::exp:
      return std::exp(x);
    case UnaryOp::log:
      return std::log(x);
    case UnaryOp::log1p:
      return std::log1p(x);
    case UnaryOp::relu:
      return std::isnan(x) ? x : (x > 0 ? x : 0.0);
    case UnaryOp::sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case UnaryOp::tanh:
      return std::tanh(x);
    case UnaryOp::gelu_tanh:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / kPi) * (x + 0.044715 * x * x * x)));
    case UnaryOp::gelu_erf:
      return 0.5 * x * std::erfc(-x / std::sqrt(2.0));  // tf.nn.gelu(approximate = FALSE)
    case UnaryOp::silu:
      return x / (1.0 + std::exp(-x));
  }
  return std::numeric_limits<double>::quiet_NaN();
}

inline double binary(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::add:
      return a + b;
    case BinaryOp::subtract:
      return a - b;
    case BinaryOp::multiply:
      return a * b;
    case BinaryOp::divide:
      return a / b;
    case BinaryOp::power:
      return std::pow(a, b);
    case BinaryOp::maximum:
      return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
    case BinaryOp::minimum:
      return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b);
    case BinaryOp::equal:
      return a == b;
    case BinaryOp::not_equal:
      return a != b;
    case BinaryOp::less:
      return a < b;
    case BinaryOp::less_equal:
      return a <= b;
    case BinaryOp::greater:
      return a > b;
    case BinaryOp::greater_equal:
      return a >= b;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// Central finite difference of f at x with step h.
template <typename F>
double central(F&& f, double x, double h) {
  return (f(x + h) - f(x - h)) / (2.0 * h);
}

// The flat index into `operand` (right-aligned, size-1 dims broadcast) of
// element `e` of the row-major `out` shape: numpy's rule, by hand.
inline int64_t operand_index(const Shape& out, const Shape& operand, int64_t e) {
  int64_t idx = 0, run = 1;
  for (int j = out.rank() - 1; j >= 0; --j) {
    const int64_t i = e % out[j];
    e /= out[j];
    const int oj = j - (out.rank() - operand.rank());
    if (oj < 0) continue;
    if (operand[oj] != 1) idx += i * run;
    run *= operand[oj];
  }
  return idx;
}

// |got - want| <= abs_tol + rel_tol * |want|, with NaN matching NaN and an
// infinity matching the same infinity.
inline bool close(double got, double want, double rel_tol, double abs_tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= abs_tol + rel_tol * std::fabs(want);
}

}  // namespace testref
}  // namespace mr
