// Learning-rate schedules with Keras 3's formulas
// (keras/src/optimizers/schedules/learning_rate_schedule.py). The core
// evaluates a schedule on the host once per step, from the optimizer's
// iteration count, into the step's device block (core/step_scalars.h): one
// implementation, which R also calls for display.
//
// Keras evaluates a schedule in float32 (the dtype of its initial learning
// rate); value() does the same so that the learning rate of every step is
// the float Keras computes, up to the rounding of cos/pow/log.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mr {

struct LrSchedule {
  enum class Kind {
    constant,  // no schedule: the optimizer's learning_rate
    exponential_decay,
    inverse_time_decay,
    piecewise_constant_decay,
    polynomial_decay,
    cosine_decay,
    cosine_decay_restarts
  };
  Kind kind = Kind::constant;
  double initial_learning_rate = 0.0;
  double decay_steps = 1.0;                        // first_decay_steps for cosine_decay_restarts
  double decay_rate = 0.0;                         // exponential / inverse time
  bool staircase = false;                          // exponential / inverse time
  std::vector<double> boundaries, values;          // piecewise constant
  double end_learning_rate = 0.0001, power = 1.0;  // polynomial
  bool cycle = false;                              // polynomial
  double alpha = 0.0;                              // cosine decays
  bool has_warmup = false;                         // cosine: warmup_target given
  double warmup_target = 0.0, warmup_steps = 0.0;  // cosine
  double t_mul = 2.0, m_mul = 1.0;                 // cosine restarts
};

LrSchedule::Kind lr_schedule_kind(const std::string& name);
// Keras' class name ("ExponentialDecay", ...).
const char* lr_schedule_class_name(LrSchedule::Kind kind);

// Errors (value) for arguments Keras refuses (decay_steps <= 0, lengths of
// boundaries and values).
void validate(const LrSchedule& s);

// The learning rate at optimizer iteration `step` (Keras calls the schedule
// with optimizer.iterations, the number of updates before this one).
float lr_schedule_value(const LrSchedule& s, int64_t step);

}  // namespace mr
