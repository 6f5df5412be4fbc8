// Optimizers with Keras 3's defaults and update rules. The slots (moments,
// velocities) are flat buffers laid out like the parameters, so one fused
// backend call updates every variable of a replica.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.h"
#include "nn/lr_schedule.h"

namespace mr {

struct OptimizerConfig {
  // Issue 13 appended adagrad .. lamb (the first four keep their values).
  enum class Kind { sgd, adam, adamw, rmsprop, adagrad, adadelta, adamax, nadam, ftrl, lion, lamb };
  Kind kind = Kind::adam;
  double learning_rate = 0.001;
  double beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7;  // adam / adamw (epsilon also rmsprop)
  bool amsgrad = false;
  double weight_decay = 0.0;  // adamw default 0.004; any optimizer may set it
  double momentum = 0.0;      // sgd, rmsprop
  bool nesterov = false;      // sgd
  double rho = 0.9;           // rmsprop
  bool centered = false;      // rmsprop
  // ---- issue 13 (i13-opt): more rules and the update pipeline (train/update.h)
  double rho_adadelta = 0.95;              // adadelta's rho (Keras' default differs from rmsprop's)
  double initial_accumulator_value = 0.1;  // adagrad, ftrl
  double learning_rate_power = -0.5;       // ftrl
  double l1 = 0.0, l2 = 0.0, l2_shrinkage = 0.0, beta = 0.0;  // ftrl
  // The learning rate is the schedule's value at the iteration when the
  // schedule is not constant (learning_rate is then unused).
  LrSchedule schedule;
  // 0 means "not set" (Keras' None); at most one of the three is set.
  double clipnorm = 0.0, clipvalue = 0.0, global_clipnorm = 0.0;
  bool use_ema = false;
  double ema_momentum = 0.99;
  int64_t ema_overwrite_frequency = 0;
  int64_t gradient_accumulation_steps = 0;  // 0: none, else >= 2
};

// The learning rate of update `iteration` + 1 (the schedule's value at
// `iteration`, or learning_rate), as Keras' optimizer.learning_rate reads.
double current_learning_rate(const OptimizerConfig& c, int64_t iteration);
// Whether update `iteration` + 1 applies the gradients (always, except under
// gradient accumulation: every gradient_accumulation_steps-th step, counted
// by Keras' optimizer.iterations, which counts every step).
bool applies_update(const OptimizerConfig& c, int64_t iteration);
// Keras' optimizer.iterations after `iteration` steps: the raw count divided
// by gradient_accumulation_steps (floor) under accumulation. Bias
// corrections, Nadam's momentum schedule and EMA read it; a learning rate
// schedule reads the raw count (optimizer._iterations), which is what is
// saved.
int64_t keras_iterations(const OptimizerConfig& c, int64_t iteration);
// The slots of the optimizer's own rule (slot_names() minus EMA and the
// accumulator); EMA's "average" and "gradient_accumulator" follow them.
int rule_slot_count(const OptimizerConfig& c);
// The value a slot starts at (Adagrad / Ftrl accumulators: initial_accumulator_value).
float slot_initial_value(const OptimizerConfig& c, int k);
// Nadam's u_product after update `iteration` + 1 (Keras keeps it in a
// variable; it is a function of the iterations, recomputed in float32).
float nadam_u_product(const OptimizerConfig& c, int64_t iteration);
UpdateHyper update_hyper(const OptimizerConfig& c);

OptimizerConfig::Kind optimizer_kind(const std::string& name);
const char* optimizer_class_name(OptimizerConfig::Kind kind);  // "Adam", "SGD", ...

// Number of slot buffers (each as long as the flat parameter buffer): adam
// m, v (+ vhat); sgd momentum (if any); rmsprop velocity (+ momentum)
// (+ average_gradient); adagrad accumulator; adadelta accumulated_grad,
// accumulated_delta_var; adamax momentum, norm; nadam / lamb momentum,
// velocity; ftrl accumulator, linear; lion momentum; then "average" (EMA)
// and "gradient_accumulator" when configured.
int slot_count(const OptimizerConfig& c);
std::vector<std::string> slot_names(const OptimizerConfig& c);

// The per-step values of update `iteration` + 1 (the block the step writes
// to the device once per step; core/step_scalars.h).
StepScalars step_scalars(const OptimizerConfig& c, int64_t iteration);

// One update of every variable, the per-step values read from the device
// block `s`; slots point to slot_count() buffers. Every rule but Lamb (whose
// trust ratio needs per-variable norms: train/update.cpp).
void apply_update(Backend& be, const OptimizerConfig& c, const StepScalars* s, int64_t n,
                  float* params, const float* grads, const std::vector<float*>& slots);
// The same for a caller without a block: `iteration` is the number of
// updates done before this one (Keras' optimizer.iterations).
void apply_update(Backend& be, const OptimizerConfig& c, int64_t iteration, int64_t n,
                  float* params, const float* grads, const std::vector<float*>& slots);

void validate(const OptimizerConfig& c);

}  // namespace mr
