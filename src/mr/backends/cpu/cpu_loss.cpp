// Losses and metrics on the CPU, Keras 3 (TensorFlow backend) semantics:
// - sparse CE, logits: logsumexp(z) - z[y]; probabilities: c = clip(p, eps,
//   1 - eps), loss = log(sum c) - log(c[y]) (Keras clips, takes the log and
//   feeds it to sparse_softmax_cross_entropy_with_logits, which normalises).
// - categorical CE, logits: sum_j t_j (logsumexp(z) - z_j); probabilities:
//   q = p / sum(p), c = clip(q, eps, 1 - eps), loss = -sum_j t_j log(c_j).
// - binary CE, per element then the mean over cols; probabilities:
//   c = clip(p), -(t log c + (1 - t) log(1 - c)); logits: the stable
//   max(z, 0) - z t + log(1 + exp(-|z|)).
// - MSE: mean over cols of (p - t)^2.
// Gradients are those of the per-sample value (clip passes gradient where its
// input lies inside [eps, 1 - eps], as tf.clip_by_value does), times grad_scale.
// eps = 1e-7 (keras.config.epsilon()).
#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"

namespace mr {

namespace {

constexpr float kEps = 1e-7f;
const float kOneMinusEps = static_cast<float>(1.0 - 1e-7);

inline bool inside_clip(float p) { return p >= kEps && p <= kOneMinusEps; }
inline float clip(float p) { return p < kEps ? kEps : (p > kOneMinusEps ? kOneMinusEps : p); }

int64_t class_index(float v, int64_t row, int64_t cols) {
  // NaN fails both comparisons; non-integers fail the floor test.
  if (!(v >= 0.0f && v < static_cast<float>(cols) && std::floor(v) == v))
    fail(ErrorKind::value, "label ", v, " at row ", row, " is outside 0..", cols - 1);
  return static_cast<int64_t>(v);
}

// log(sum_j exp(z_j)), max-subtracted, in double.
double logsumexp(const float* z, int64_t cols, float* mx_out) {
  float mx = z[0];
  for (int64_t c = 1; c < cols; ++c) mx = z[c] > mx ? z[c] : mx;
  double s = 0.0;
  for (int64_t c = 0; c < cols; ++c) s += std::exp(static_cast<double>(z[c]) - mx);
  *mx_out = mx;
  return static_cast<double>(mx) + std::log(s);
}

struct LossArgs {
  int64_t cols;
  const float* pred;
  const float* target;
  float gs;
  float* dpred;
};

double sparse_ce(const LossArgs& a, int64_t r, bool logits) {
  const int64_t cols = a.cols;
  const float* z = a.pred + r * cols;
  const int64_t y = class_index(a.target[r], r, cols);
  float* d = a.dpred ? a.dpred + r * cols : nullptr;
  if (logits) {
    float mx;
    const double lse = logsumexp(z, cols, &mx);
    if (d)
      for (int64_t c = 0; c < cols; ++c) {
        const double p = std::exp(static_cast<double>(z[c]) - lse);
        d[c] = static_cast<float>(a.gs * (p - (c == y ? 1.0 : 0.0)));
      }
    return lse - z[y];
  }
  double s = 0.0;
  for (int64_t c = 0; c < cols; ++c) s += clip(z[c]);
  const double cy = clip(z[y]);
  if (d)
    for (int64_t c = 0; c < cols; ++c) {
      const double g = 1.0 / s - (c == y ? 1.0 / cy : 0.0);
      d[c] = inside_clip(z[c]) ? static_cast<float>(a.gs * g) : 0.0f;
    }
  return std::log(s) - std::log(cy);
}

double categorical_ce(const LossArgs& a, int64_t r, bool logits) {
  const int64_t cols = a.cols;
  const float* z = a.pred + r * cols;
  const float* t = a.target + r * cols;
  float* d = a.dpred ? a.dpred + r * cols : nullptr;
  if (logits) {
    float mx;
    const double lse = logsumexp(z, cols, &mx);
    double tsum = 0.0, loss = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      tsum += t[c];
      loss += static_cast<double>(t[c]) * (lse - z[c]);
    }
    if (d)
      for (int64_t c = 0; c < cols; ++c) {
        const double p = std::exp(static_cast<double>(z[c]) - lse);
        d[c] = static_cast<float>(a.gs * (p * tsum - t[c]));
      }
    return loss;
  }
  double s = 0.0;
  for (int64_t c = 0; c < cols; ++c) s += z[c];
  double loss = 0.0, gq_dot_q = 0.0;
  for (int64_t c = 0; c < cols; ++c) {
    const float q = static_cast<float>(z[c] / s);
    const double cq = clip(q);
    loss -= static_cast<double>(t[c]) * std::log(cq);
    if (d) {
      // dL/dq_c, kept in d until the normalisation's Jacobian is applied.
      const double gq = inside_clip(q) ? -static_cast<double>(t[c]) / cq : 0.0;
      gq_dot_q += gq * (z[c] / s);
      d[c] = static_cast<float>(gq);
    }
  }
  // q_j = p_j / s  =>  dL/dp_i = (dL/dq_i - sum_j dL/dq_j q_j) / s.
  if (d)
    for (int64_t c = 0; c < cols; ++c)
      d[c] = static_cast<float>(a.gs * (static_cast<double>(d[c]) - gq_dot_q) / s);
  return loss;
}

double binary_ce(const LossArgs& a, int64_t r, bool logits) {
  const int64_t cols = a.cols;
  const float* z = a.pred + r * cols;
  const float* t = a.target + r * cols;
  float* d = a.dpred ? a.dpred + r * cols : nullptr;
  const double inv_cols = 1.0 / static_cast<double>(cols);
  double sum = 0.0;
  for (int64_t c = 0; c < cols; ++c) {
    const double tc = t[c];
    if (logits) {
      const double x = z[c];
      sum += (x > 0.0 ? x : 0.0) - x * tc + std::log1p(std::exp(-std::fabs(x)));
      if (d) {
        const double sg = x >= 0.0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
        d[c] = static_cast<float>(a.gs * (sg - tc) * inv_cols);
      }
    } else {
      const double p = clip(z[c]);
      sum -= tc * std::log(p) + (1.0 - tc) * std::log(1.0 - p);
      if (d)
        d[c] = inside_clip(z[c])
                   ? static_cast<float>(a.gs * (-tc / p + (1.0 - tc) / (1.0 - p)) * inv_cols)
                   : 0.0f;
    }
  }
  return sum * inv_cols;
}

double mse(const LossArgs& a, int64_t r) {
  const int64_t cols = a.cols;
  const float* p = a.pred + r * cols;
  const float* t = a.target + r * cols;
  float* d = a.dpred ? a.dpred + r * cols : nullptr;
  const double inv_cols = 1.0 / static_cast<double>(cols);
  double sum = 0.0;
  for (int64_t c = 0; c < cols; ++c) {
    const double e = static_cast<double>(p[c]) - t[c];
    sum += e * e;
    if (d) d[c] = static_cast<float>(a.gs * 2.0 * e * inv_cols);
  }
  return sum * inv_cols;
}

// Index of the first maximum (as argmax); NaNs never win.
int64_t argmax(const float* x, int64_t cols) {
  int64_t best = 0;
  for (int64_t c = 1; c < cols; ++c)
    if (x[c] > x[best] || (x[best] != x[best] && x[c] == x[c])) best = c;
  return best;
}

}  // namespace

void CpuBackend::loss(LossKind kind, bool from_logits, int64_t rows, int64_t cols,
                      const float* pred, const float* target, float grad_scale, float* dpred,
                      double* loss_acc) {
  MR_CHECK(cols >= 1, shape, "a loss needs at least one column, got ", cols);
  if (rows <= 0) return;
  const LossArgs args{cols, pred, target, grad_scale, dpred};
  const double total = cpu::reduce_rows(team_, rows, cols * 8, [&](int64_t r0, int64_t r1) {
    double s = 0.0;
    for (int64_t r = r0; r < r1; ++r) {
      switch (kind) {
        case LossKind::sparse_categorical_crossentropy:
          s += sparse_ce(args, r, from_logits);
          break;
        case LossKind::categorical_crossentropy:
          s += categorical_ce(args, r, from_logits);
          break;
        case LossKind::binary_crossentropy:
          s += binary_ce(args, r, from_logits);
          break;
        case LossKind::mean_squared_error:
          s += mse(args, r);
          break;
      }
    }
    return s;
  });
  if (loss_acc != nullptr) *loss_acc += total;
}

void CpuBackend::metric(MetricKind kind, float threshold, int64_t rows, int64_t cols,
                        const float* pred, const float* target, double* acc) {
  MR_CHECK(cols >= 1, shape, "a metric needs at least one column, got ", cols);
  if (rows <= 0) return;
  const double total = cpu::reduce_rows(team_, rows, cols, [&](int64_t r0, int64_t r1) {
    double s = 0.0;
    for (int64_t r = r0; r < r1; ++r) {
      const float* p = pred + r * cols;
      switch (kind) {
        case MetricKind::sparse_categorical_accuracy:
          // Keras casts argmax to the label's dtype and compares: a label out
          // of range simply never matches.
          s += static_cast<float>(argmax(p, cols)) == target[r] ? 1.0 : 0.0;
          break;
        case MetricKind::categorical_accuracy:
          s += argmax(p, cols) == argmax(target + r * cols, cols) ? 1.0 : 0.0;
          break;
        case MetricKind::binary_accuracy: {
          // Keras: mean(y_true == cast(y_pred > threshold)).
          const float* t = target + r * cols;
          int64_t hits = 0;
          for (int64_t c = 0; c < cols; ++c) hits += t[c] == (p[c] > threshold ? 1.0f : 0.0f);
          s += static_cast<double>(hits) / static_cast<double>(cols);
          break;
        }
        case MetricKind::mean_absolute_error: {
          const float* t = target + r * cols;
          double e = 0.0;
          for (int64_t c = 0; c < cols; ++c) e += std::fabs(static_cast<double>(p[c]) - t[c]);
          s += e / static_cast<double>(cols);
          break;
        }
      }
    }
    return s;
  });
  acc[0] += total;
  acc[1] += static_cast<double>(rows);
}

}  // namespace mr
