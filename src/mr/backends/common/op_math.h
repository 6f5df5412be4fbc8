// Per-element formulas of the traced-graph ops (core/op_kinds.h), shared by
// the CPU and CUDA backends (MR_HD): one formula, two backends. Values and
// gradients are TensorFlow's (Keras 3's R users run on the TF backend),
// checked against TF 2 on the development machine:
// - sign(NaN) = NaN, sign(+-0) = +0; its gradient is 0 everywhere.
// - abs'(x) = sign(x) (0 at 0, NaN at NaN).
// - relu(NaN) = NaN, relu'(x) = x > 0 (0 at 0 and at NaN).
// - sqrt'(x) = 0.5 / sqrt(x) written through y (Inf at 0, as TF's SqrtGrad).
// - log'(x) = 1 / x, log1p'(x) = 1 / (1 + x) (Inf at 0 and -1).
// - power: d/da = b * a^(b - 1) (NaN at a = 0, b = 0 as TF: 0 * Inf),
//   d/db = out * (a > 0 ? log(a) : 0) (TF's _PowGrad: 0 where a <= 0 unless
//   out is NaN or Inf).
// - divide: d/da = 1 / b, d/db = (-a / b) / b (TF's _RealDivGrad order).
// - maximum: a gets the gradient where a >= b, b elsewhere (so at a tie a,
//   and at a NaN operand b; TF's _MaximumMinimumGrad); minimum: a <= b.
// - comparisons: no gradient (zeros).
// - gelu_tanh: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) (tf.nn.gelu,
//   approximate = TRUE); gelu_erf: 0.5 x erfc(-x / sqrt(2)) (tf.nn.gelu,
//   approximate = FALSE: erfc keeps the far negative tail, where
//   1 + erf(x / sqrt(2)) would round to 0; it is kmath::gelu, the gelu
//   activation's formula); silu: x sigmoid(x) (kmath::sigmoid).
// Backend differences (core/backend.h, "i15"): the CPU team runs with
// FTZ / DAZ and nvcc compiles without -ftz, so subnormal inputs can give
// different results (sign, comparisons); the softmax family does exp / log
// in double, at the FP64 rate on the GPU (slow on non-datacenter GPUs); on
// CUDA the reductions and the softmax family run one thread per output.
#pragma once

#include <math.h>

#include <cstdint>

#include "backends/common/kernel_math.h"
#include "backends/common/nan_math.h"
#include "backends/common/strided_math.h"
#include "core/hd.h"
#include "core/op_kinds.h"

namespace mr {
namespace opmath {

constexpr float kGeluTanhScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluTanhCubic = 0.044715f;

MR_HD float sign_of(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x == x ? 0.0f : x)); }

// 0.5 x erfc(-x / sqrt(2)) and its derivative Phi(x) + x phi(x): the gelu
// activation's formula (kmath::gelu, TF's erfc form), one for the repo.
MR_HD float gelu_erf(float x) { return kmath::gelu(x); }
MR_HD float gelu_erf_grad(float x) { return kmath::gelu_grad(x); }

MR_HD float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + tanhf(kGeluTanhScale * (x + kGeluTanhCubic * x * x * x)));
}
// d/dx: 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 k x^2), t = tanh(c (x + k x^3)).
MR_HD float gelu_tanh_grad(float x) {
  const float t = tanhf(kGeluTanhScale * (x + kGeluTanhCubic * x * x * x));
  return 0.5f * (1.0f + t) +
         0.5f * x * (1.0f - t * t) * kGeluTanhScale * (1.0f + 3.0f * kGeluTanhCubic * x * x);
}

MR_HD float unary_value(UnaryOp op, float x) {
  switch (op) {
    case UnaryOp::negative:
      return -x;
    case UnaryOp::abs:
      return fabsf(x);
    case UnaryOp::sign:
      return sign_of(x);
    case UnaryOp::square:
      return x * x;
    case UnaryOp::sqrt:
      return sqrtf(x);
    case UnaryOp::exp:
      return expf(x);
    case UnaryOp::log:
      return logf(x);
    case UnaryOp::log1p:
      return log1pf(x);
    case UnaryOp::relu:
      return x > 0.0f ? x : (x == x ? 0.0f : x);
    case UnaryOp::sigmoid:
      return kmath::sigmoid(x);
    case UnaryOp::tanh:
      return tanhf(x);
    case UnaryOp::gelu_tanh:
      return gelu_tanh(x);
    case UnaryOp::gelu_erf:
      return gelu_erf(x);
    case UnaryOp::silu:
      return x * kmath::sigmoid(x);
  }
  return x;
}

// Whether unary_grad reads y = f(x) (its derivative is written through y):
// the backends require y for these and may pass a null y otherwise.
MR_HD bool unary_reads_y(UnaryOp op) {
  return op == UnaryOp::sigmoid || op == UnaryOp::tanh || op == UnaryOp::exp || op == UnaryOp::sqrt;
}

// dy * f'(x), with y = f(x) (read only where unary_reads_y).
MR_HD float unary_grad(UnaryOp op, float x, float y, float dy) {
  switch (op) {
    case UnaryOp::negative:
      return -dy;
    case UnaryOp::abs:
      return dy * sign_of(x);
    case UnaryOp::sign:
      return 0.0f;
    case UnaryOp::square:
      return dy * (2.0f * x);
    case UnaryOp::sqrt:
      return 0.5f * dy / y;
    case UnaryOp::exp:
      return dy * y;
    case UnaryOp::log:
      return dy * (1.0f / x);
    case UnaryOp::log1p:
      return dy * (1.0f / (1.0f + x));
    case UnaryOp::relu:
      // A select, as the repo's relu activation backward (cpu_activation.cpp,
      // cuda_activation.cu: y > 0 ? dy : 0): a NaN dy where x <= 0 gives 0.
      // TF's ReluGrad, dy * (x > 0), would give NaN there; kept the repo's
      // so that op_relu and layer activation "relu" agree.
      return x > 0.0f ? dy : 0.0f;
    case UnaryOp::sigmoid:
      return dy * kmath::sigmoid_grad_y(y);
    case UnaryOp::tanh:
      return dy * kmath::tanh_grad_y(y);
    case UnaryOp::gelu_tanh:
      return dy * gelu_tanh_grad(x);
    case UnaryOp::gelu_erf:
      return dy * gelu_erf_grad(x);
    case UnaryOp::silu:
      return dy * kmath::silu_grad(x);
  }
  return dy;
}

MR_HD float binary_value(BinaryOp op, float a, float b) {
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
      return powf(a, b);
    case BinaryOp::maximum:
      return kmath::extremum_of(true, a, b);
    case BinaryOp::minimum:
      return kmath::extremum_of(false, a, b);
    case BinaryOp::equal:
      return a == b ? 1.0f : 0.0f;
    case BinaryOp::not_equal:
      return a != b ? 1.0f : 0.0f;
    case BinaryOp::less:
      return a < b ? 1.0f : 0.0f;
    case BinaryOp::less_equal:
      return a <= b ? 1.0f : 0.0f;
    case BinaryOp::greater:
      return a > b ? 1.0f : 0.0f;
    case BinaryOp::greater_equal:
      return a >= b ? 1.0f : 0.0f;
  }
  return a;
}

// The out-shaped partials dout * d(a op b)/da (*ga) and /db (*gb).
MR_HD void binary_grad(BinaryOp op, float a, float b, float dout, float* ga, float* gb) {
  switch (op) {
    case BinaryOp::add:
      *ga = dout;
      *gb = dout;
      return;
    case BinaryOp::subtract:
      *ga = dout;
      *gb = -dout;
      return;
    case BinaryOp::multiply:
      *ga = dout * b;
      *gb = dout * a;
      return;
    case BinaryOp::divide:
      *ga = dout / b;
      *gb = dout * ((-a / b) / b);
      return;
    case BinaryOp::power:
      *ga = dout * b * powf(a, b - 1.0f);
      *gb = dout * powf(a, b) * (a > 0.0f ? logf(a) : 0.0f);
      return;
    case BinaryOp::maximum:
      *ga = a >= b ? dout : 0.0f;
      *gb = a >= b ? 0.0f : dout;
      return;
    case BinaryOp::minimum:
      *ga = a <= b ? dout : 0.0f;
      *gb = a <= b ? 0.0f : dout;
      return;
    default:  // comparisons
      *ga = 0.0f;
      *gb = 0.0f;
      return;
  }
}

// Offsets of out element e (0 <= e < g.size, row-major over g.dims) in each
// operand. Axis 0 takes what is left of e without a division (e < dims[0]
// there), so rank 0 and rank 1 (same shapes, a scalar with a tensor) do no
// 64-bit division at all.
MR_HD void broadcast_offsets(const Broadcast& g, int64_t e, int64_t* off) {
  for (int k = 0; k < kMaxBroadcastOperands; ++k) off[k] = 0;
  if (g.rank <= 0) return;
  for (int j = g.rank - 1; j > 0; --j) {
    const int64_t q = e / g.dims[j];
    const int64_t i = e - q * g.dims[j];
    e = q;
    for (int k = 0; k < g.operands; ++k) off[k] += i * g.stride[k][j];
  }
  for (int k = 0; k < g.operands; ++k) off[k] += e * g.stride[k][0];
}

// The offset of x[o, 0, i] in an outer x extent x inner view for output
// j = o * inner + i (inner > 0): where reduce / softmax of output j start.
MR_HD int64_t axis_base(int64_t j, int64_t extent, int64_t inner) {
  const int64_t o = j / inner;
  return o * extent * inner + (j - o * inner);
}

// ---- reductions over the middle axis of outer x extent x inner ------------------
MR_HD float reduce_identity(ReduceOp op) {
  return op == ReduceOp::sum ? 0.0f : (op == ReduceOp::max ? -INFINITY : INFINITY);
}
MR_HD float reduce_step(ReduceOp op, float acc, float x) {
  return op == ReduceOp::sum
             ? acc + x
             : (op == ReduceOp::max ? nanmath::max_nan(acc, x) : nanmath::min_nan(acc, x));
}
// y[o, i] of the (o, i) whose first element is x (elements at stride `inner`).
// sum: accumulated in double in increasing e and rounded to float once at
// the end (a float accumulator stalls: 2^25 ones would sum to 2^24); double
// additions in one fixed order are IEEE-exact on both backends, so CPU and
// CUDA agree bit for bit. max / min: float, NaN-propagating.
MR_HD float reduce_one(ReduceOp op, int64_t extent, int64_t inner, const float* x) {
  if (op == ReduceOp::sum) {
    double s = 0.0;
    for (int64_t e = 0; e < extent; ++e) s += static_cast<double>(x[e * inner]);
    return static_cast<float>(s);
  }
  float acc = reduce_identity(op);
  for (int64_t e = 0; e < extent; ++e) acc = reduce_step(op, acc, x[e * inner]);
  return acc;
}
// Its backward: sum passes dy; max / min give (x == y) / count * dy, TF's
// _MinOrMaxGrad (count == 0, when y is NaN, gives 0 / 0 = NaN).
MR_HD void reduce_grad_one(ReduceOp op, int64_t extent, int64_t inner, const float* x, float y,
                           float dy, float* dx) {
  if (op == ReduceOp::sum) {
    for (int64_t e = 0; e < extent; ++e) dx[e * inner] = dy;
    return;
  }
  float count = 0.0f;
  for (int64_t e = 0; e < extent; ++e) count += x[e * inner] == y ? 1.0f : 0.0f;
  for (int64_t e = 0; e < extent; ++e)
    dx[e * inner] = ((x[e * inner] == y ? 1.0f : 0.0f) / count) * dy;
}

// ---- softmax, log_softmax, logsumexp over the middle axis -----------------------
// The maximum (NaN-propagating) of the extent elements at stride inner.
MR_HD float axis_max(int64_t extent, int64_t inner, const float* x) {
  return reduce_one(ReduceOp::max, extent, inner, x);
}
// y for one (o, i): softmax / log_softmax write extent values at stride
// inner, logsumexp one value.
MR_HD void softmax_one(SoftmaxOp op, int64_t extent, int64_t inner, const float* x, float* y) {
  float m = axis_max(extent, inner, x);
  // tf.reduce_logsumexp shifts by 0 when the maximum is not finite (an
  // all -Inf axis gives -Inf, a +Inf gives +Inf); softmax keeps the shift.
  if (op == SoftmaxOp::logsumexp && !isfinite(m)) m = 0.0f;
  double s = 0.0;
  if (op == SoftmaxOp::softmax) {
    // One exponential per element: exp(x - m) (<= 1) is kept in y, rounded
    // to float, and divided by the sum (in double) in a second pass.
    for (int64_t e = 0; e < extent; ++e) {
      const double v = exp(static_cast<double>(x[e * inner]) - m);
      s += v;
      y[e * inner] = static_cast<float>(v);
    }
    for (int64_t e = 0; e < extent; ++e)
      y[e * inner] = static_cast<float>(static_cast<double>(y[e * inner]) / s);
    return;
  }
  for (int64_t e = 0; e < extent; ++e) s += exp(static_cast<double>(x[e * inner]) - m);
  if (op == SoftmaxOp::logsumexp) {
    *y = static_cast<float>(log(s) + m);
    return;
  }
  const double ls = log(s);
  for (int64_t e = 0; e < extent; ++e)
    y[e * inner] = static_cast<float>(static_cast<double>(x[e * inner]) - m - ls);
}
// dx for one (o, i); y, dy at stride inner (logsumexp: one value each).
MR_HD void softmax_grad_one(SoftmaxOp op, int64_t extent, int64_t inner, const float* x,
                            const float* y, const float* dy, float* dx) {
  if (op == SoftmaxOp::logsumexp) {
    const double ly = *y, g = *dy;
    for (int64_t e = 0; e < extent; ++e)
      dx[e * inner] = static_cast<float>(g * exp(static_cast<double>(x[e * inner]) - ly));
    return;
  }
  double s = 0.0;
  if (op == SoftmaxOp::softmax) {
    for (int64_t e = 0; e < extent; ++e) s += static_cast<double>(dy[e * inner]) * y[e * inner];
    for (int64_t e = 0; e < extent; ++e)
      dx[e * inner] = static_cast<float>(y[e * inner] * (dy[e * inner] - s));
    return;
  }
  for (int64_t e = 0; e < extent; ++e) s += dy[e * inner];
  for (int64_t e = 0; e < extent; ++e)
    dx[e * inner] = static_cast<float>(dy[e * inner] - exp(static_cast<double>(y[e * inner])) * s);
}

}  // namespace opmath
}  // namespace mr
