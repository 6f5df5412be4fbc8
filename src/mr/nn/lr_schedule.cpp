#include "nn/lr_schedule.h"

#include <cmath>

#include "core/error.h"

namespace mr {

namespace {
constexpr float kPi = 3.14159265358979323846f;

// CosineDecay's decay part at `step` (already clamped), from `from_lr`.
float cosine_part(float step, float decay_steps, float from_lr, float alpha) {
  const float fraction = step / decay_steps;
  const float cosine = 0.5f * (1.0f + std::cos(kPi * fraction));
  const float decayed = (1.0f - alpha) * cosine + alpha;
  return from_lr * decayed;
}
}  // namespace

LrSchedule::Kind lr_schedule_kind(const std::string& name) {
  using K = LrSchedule::Kind;
  if (name == "exponential_decay" || name == "ExponentialDecay") return K::exponential_decay;
  if (name == "inverse_time_decay" || name == "InverseTimeDecay") return K::inverse_time_decay;
  if (name == "piecewise_constant_decay" || name == "PiecewiseConstantDecay")
    return K::piecewise_constant_decay;
  if (name == "polynomial_decay" || name == "PolynomialDecay") return K::polynomial_decay;
  if (name == "cosine_decay" || name == "CosineDecay") return K::cosine_decay;
  if (name == "cosine_decay_restarts" || name == "CosineDecayRestarts")
    return K::cosine_decay_restarts;
  if (name == "constant") return K::constant;
  fail(ErrorKind::value, "unknown learning rate schedule '", name, "'");
}

const char* lr_schedule_class_name(LrSchedule::Kind kind) {
  using K = LrSchedule::Kind;
  switch (kind) {
    case K::exponential_decay:
      return "ExponentialDecay";
    case K::inverse_time_decay:
      return "InverseTimeDecay";
    case K::piecewise_constant_decay:
      return "PiecewiseConstantDecay";
    case K::polynomial_decay:
      return "PolynomialDecay";
    case K::cosine_decay:
      return "CosineDecay";
    case K::cosine_decay_restarts:
      return "CosineDecayRestarts";
    case K::constant:
      break;
  }
  return "constant";
}

void validate(const LrSchedule& s) {
  using K = LrSchedule::Kind;
  if (s.kind == K::constant) return;
  if (s.kind == K::piecewise_constant_decay) {
    MR_CHECK(!s.values.empty() && s.boundaries.size() + 1 == s.values.size(), value,
             "the length of boundaries should be 1 less than the length of values; got ",
             s.boundaries.size(), " boundaries and ", s.values.size(), " values");
    return;
  }
  MR_CHECK(s.decay_steps > 0, value,
           s.kind == K::cosine_decay_restarts ? "first_decay_steps" : "decay_steps",
           " must be > 0, got ", s.decay_steps);
  MR_CHECK(s.kind != K::cosine_decay || !s.has_warmup || s.warmup_steps >= 0, value,
           "warmup_steps must be >= 0, got ", s.warmup_steps);
}

float lr_schedule_value(const LrSchedule& s, int64_t step_i) {
  using K = LrSchedule::Kind;
  const float lr0 = static_cast<float>(s.initial_learning_rate);
  const float step = static_cast<float>(step_i);
  const float decay_steps = static_cast<float>(s.decay_steps);
  switch (s.kind) {
    case K::constant:
      return lr0;
    case K::exponential_decay: {
      float p = step / decay_steps;
      if (s.staircase) p = std::floor(p);
      return lr0 * std::pow(static_cast<float>(s.decay_rate), p);
    }
    case K::inverse_time_decay: {
      float p = step / decay_steps;
      if (s.staircase) p = std::floor(p);
      return lr0 / (1.0f + static_cast<float>(s.decay_rate) * p);
    }
    case K::piecewise_constant_decay: {
      // Keras sums value_i * [step in range i] over the ranges
      // (-inf, b0], (b0, b1], ..., (b_last, inf).
      const size_t nb = s.boundaries.size();
      if (nb == 0) return static_cast<float>(s.values[0]);
      if (static_cast<double>(step_i) <= s.boundaries[0]) return static_cast<float>(s.values[0]);
      for (size_t i = 1; i < nb; ++i)
        if (static_cast<double>(step_i) <= s.boundaries[i]) return static_cast<float>(s.values[i]);
      return static_cast<float>(s.values[nb]);
    }
    case K::polynomial_decay: {
      const float end = static_cast<float>(s.end_learning_rate);
      float t = step, ds = decay_steps;
      if (s.cycle) {
        const float mult = t == 0.0f ? 1.0f : std::ceil(t / decay_steps);
        ds = ds * mult;
      } else {
        t = std::fmin(t, ds);
      }
      const float p = t / ds;
      return (lr0 - end) * std::pow(1.0f - p, static_cast<float>(s.power)) + end;
    }
    case K::cosine_decay: {
      const float alpha = static_cast<float>(s.alpha);
      if (!s.has_warmup) return cosine_part(std::fmin(step, decay_steps), decay_steps, lr0, alpha);
      const float target = static_cast<float>(s.warmup_target);
      const float warm = static_cast<float>(s.warmup_steps);
      const float t = std::fmin(step, decay_steps + warm);
      if (t < warm) return (target - lr0) * (t / warm) + lr0;
      return cosine_part(t - warm, decay_steps, target, alpha);
    }
    case K::cosine_decay_restarts: {
      const float alpha = static_cast<float>(s.alpha);
      const float t_mul = static_cast<float>(s.t_mul), m_mul = static_cast<float>(s.m_mul);
      float fraction = step / decay_steps;
      float i_restart;
      if (t_mul == 1.0f) {
        i_restart = std::floor(fraction);
        fraction -= i_restart;
      } else {
        i_restart = std::floor(std::log(1.0f - fraction * (1.0f - t_mul)) / std::log(t_mul));
        const float sum_r = (1.0f - std::pow(t_mul, i_restart)) / (1.0f - t_mul);
        fraction = (fraction - sum_r) / std::pow(t_mul, i_restart);
      }
      const float m_fac = std::pow(m_mul, i_restart);
      const float cosine = 0.5f * m_fac * (1.0f + std::cos(kPi * fraction));
      const float decayed = (1.0f - alpha) * cosine + alpha;
      return lr0 * decayed;
    }
  }
  return lr0;
}

}  // namespace mr
