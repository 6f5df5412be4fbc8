// Activations (forward and backward) and dropout on the CPU.
//
// Backward inputs used (callers pass both x and y; y may alias x in place for
// every activation but softmax and gelu, so those that allow aliasing read y):
//   linear: neither; relu: y (y > 0 <=> x > 0); sigmoid: y; tanh: y;
//   softmax: y; gelu: x; log_softmax: y; the other activations (and relu
//   with parameters): x, through kmath::act_grad.
#include <cfloat>
#include <cmath>

#include "backends/common/kernel_math.h"
#include "backends/common/nan_math.h"
#include "backends/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/rng.h"

namespace mr {

namespace {

// Row-wise softmax, max-subtracted; outputs below FLT_MIN are set to exactly 0
// (subnormal probabilities would otherwise slow down every later op on them).
void softmax_rows(int64_t r0, int64_t r1, int64_t cols, const float* x, float* y) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float mx = xr[0];
    for (int64_t c = 1; c < cols; ++c) mx = xr[c] > mx ? xr[c] : mx;
    float sum = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      yr[c] = std::exp(xr[c] - mx);
      sum += yr[c];
    }
    const float inv = 1.0f / sum;
    for (int64_t c = 0; c < cols; ++c) {
      const float p = yr[c] * inv;
      yr[c] = p < FLT_MIN ? 0.0f : p;
    }
  }
}

void softmax_backward_rows(int64_t r0, int64_t r1, int64_t cols, const float* y, const float* dy,
                           float* dx) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* yr = y + r * cols;
    const float* dyr = dy + r * cols;
    float* dxr = dx + r * cols;
    float dot = 0.0f;
    for (int64_t c = 0; c < cols; ++c) dot += dyr[c] * yr[c];
    for (int64_t c = 0; c < cols; ++c) dxr[c] = yr[c] * (dyr[c] - dot);
  }
}

// Row-wise log-softmax: y = (x - max) - log(sum exp(x - max)), the sum in
// double; x - max first, so large logits lose no digits to the rounding of
// max + log(sum). Safe in place: each row's max and sum are read before the
// row is written.
void log_softmax_rows(int64_t r0, int64_t r1, int64_t cols, const float* x, float* y) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * cols;
    float mx = xr[0];
    for (int64_t c = 1; c < cols; ++c) mx = xr[c] > mx ? xr[c] : mx;
    double s = 0.0;
    for (int64_t c = 0; c < cols; ++c) s += std::exp(static_cast<double>(xr[c]) - mx);
    const double ls = std::log(s);
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = static_cast<float>(static_cast<double>(xr[c] - mx) - ls);
  }
}

// dx = dy - softmax(x) * sum(dy), softmax(x) = exp(y).
void log_softmax_backward_rows(int64_t r0, int64_t r1, int64_t cols, const float* y,
                               const float* dy, float* dx) {
  for (int64_t r = r0; r < r1; ++r) {
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c) sum += dy[r * cols + c];
    for (int64_t c = 0; c < cols; ++c)
      dx[r * cols + c] = dy[r * cols + c] - std::exp(y[r * cols + c]) * static_cast<float>(sum);
  }
}

}  // namespace

void CpuBackend::activation_forward(Activation act, int64_t rows, int64_t cols, const float* x,
                                    float* y, const ActivationParams& p) {
  const int64_t n = rows * cols;
  if (act == Activation::log_softmax) {
    if (cols == 0) return;
    cpu::for_rows(team_, rows, cols * 4,
                  [&](int64_t r0, int64_t r1) { log_softmax_rows(r0, r1, cols, x, y); });
    return;
  }
  if (kmath::generic_activation(act, p)) {
    cpu::for_range(team_, n, cpu::kElementwiseGrain / 8, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = kmath::act_value(act, x[i], p);
    });
    return;
  }
  switch (act) {
    case Activation::linear:
      if (x != y) copy(y, x, static_cast<size_t>(n) * sizeof(float));
      return;
    case Activation::relu:
      cpu::for_range(team_, n, cpu::kElementwiseGrain, [&](int64_t b, int64_t e) {
        // x < 0 ? 0 : x keeps a NaN (TensorFlow's relu returns NaN for NaN).
        for (int64_t i = b; i < e; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
      });
      return;
    case Activation::sigmoid:
      cpu::for_range(team_, n, cpu::kElementwiseGrain / 4, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] = kmath::sigmoid(x[i]);
      });
      return;
    case Activation::tanh:
      cpu::for_range(team_, n, cpu::kElementwiseGrain / 4, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] = std::tanh(x[i]);
      });
      return;
    case Activation::softmax:
      MR_CHECK(x != y, internal, "softmax cannot run in place");
      if (cols == 0) return;
      cpu::for_rows(team_, rows, cols * 4,
                    [&](int64_t r0, int64_t r1) { softmax_rows(r0, r1, cols, x, y); });
      return;
    case Activation::gelu:
      MR_CHECK(x != y, internal, "gelu cannot run in place");
      cpu::for_range(team_, n, cpu::kElementwiseGrain / 8, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] = kmath::gelu(x[i]);
      });
      return;
    default:
      break;
  }
  fail(ErrorKind::internal, "unknown activation");
}

void CpuBackend::activation_backward(Activation act, int64_t rows, int64_t cols, const float* x,
                                     const float* y, const float* dy, float* dx,
                                     const ActivationParams& p) {
  const int64_t n = rows * cols;
  if (act == Activation::log_softmax) {
    if (cols == 0) return;
    cpu::for_rows(team_, rows, cols * 2, [&](int64_t r0, int64_t r1) {
      log_softmax_backward_rows(r0, r1, cols, y, dy, dx);
    });
    return;
  }
  if (kmath::generic_activation(act, p)) {
    cpu::for_range(team_, n, cpu::kElementwiseGrain / 8, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dx[i] = dy[i] * kmath::act_grad(act, x[i], y[i], p);
    });
    return;
  }
  switch (act) {
    case Activation::linear:
      if (dx != dy) copy(dx, dy, static_cast<size_t>(n) * sizeof(float));
      return;
    case Activation::relu:
      // Both loads unconditional and the pointers local: the compiler then
      // vectorises a blend. (Loading dy[i] only where y[i] > 0 compiled to a
      // scalar loop with a branch per element that mispredicts on half of
      // them: ~40 us for a 64 x 256 batch on an Intel Xeon Sapphire Rapids.)
      cpu::for_range(team_, n, cpu::kElementwiseGrain, [&](int64_t b, int64_t e) {
        // dx may alias dy (each element is read before it is written).
        const float* yp = y;
        const float* dyp = dy;
        float* dxp = dx;
        for (int64_t i = b; i < e; ++i) {
          const float d = dyp[i];
          dxp[i] = yp[i] > 0.0f ? d : 0.0f;
        }
      });
      return;
    case Activation::sigmoid:
      cpu::for_range(team_, n, cpu::kElementwiseGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
      });
      return;
    case Activation::tanh:
      cpu::for_range(team_, n, cpu::kElementwiseGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
      });
      return;
    case Activation::softmax:
      if (cols == 0) return;
      cpu::for_rows(team_, rows, cols * 2, [&](int64_t r0, int64_t r1) {
        softmax_backward_rows(r0, r1, cols, y, dy, dx);
      });
      return;
    case Activation::gelu:
      cpu::for_range(team_, n, cpu::kElementwiseGrain / 8, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) dx[i] = dy[i] * kmath::gelu_grad(x[i]);
      });
      return;
    default:
      break;
  }
  fail(ErrorKind::internal, "unknown activation");
}

void CpuBackend::dropout_forward(int64_t rows, int64_t cols, float rate, uint64_t seed,
                                 const StepScalars* s, uint32_t stream, int64_t row_offset,
                                 const float* x, float* mask, float* y) {
  MR_CHECK(rate >= 0.0f && rate < 1.0f, value, "dropout rate must be in [0, 1), got ", rate);
  MR_CHECK(row_offset >= 0, value, "dropout row_offset must be >= 0, got ", row_offset);
  const RandomStream rs(seed, s->step, stream);
  const float scale = 1.0f / (1.0f - rate);
  // Element (r, c) draws word g of the stream, g = (row_offset + r) * cols + c:
  // the mask of a global row never depends on which replica or member draws it.
  const uint64_t base = static_cast<uint64_t>(row_offset) * static_cast<uint64_t>(cols);
  cpu::for_rows(team_, rows, cols * 8, [&](int64_t r0, int64_t r1) {
    const uint64_t g0 = base + static_cast<uint64_t>(r0 * cols);
    const uint64_t g1 = base + static_cast<uint64_t>(r1 * cols);
    if (g1 == g0) return;
    for (uint64_t blk = g0 >> 2; blk <= (g1 - 1) >> 2; ++blk) {
      const Philox4 words = rs.block(blk);
      for (uint64_t w = 0; w < 4; ++w) {
        const uint64_t g = blk * 4 + w;
        if (g < g0 || g >= g1) continue;
        const int64_t i = static_cast<int64_t>(g - base);
        const float m = RandomStream::uniform_of(words[w]) >= rate ? scale : 0.0f;
        mask[i] = m;
        y[i] = nanmath::dropout_value(x[i], m);
      }
    }
  });
}

}  // namespace mr
