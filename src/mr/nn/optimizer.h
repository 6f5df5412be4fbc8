// Optimizers with Keras 3's defaults and update rules. The slots (moments,
// velocities) are flat buffers laid out like the parameters, so one fused
// backend call updates every variable of a replica.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.h"

namespace mr {

struct OptimizerConfig {
  enum class Kind { sgd, adam, adamw, rmsprop };
  Kind kind = Kind::adam;
  double learning_rate = 0.001;
  double beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7;  // adam / adamw (epsilon also rmsprop)
  bool amsgrad = false;
  double weight_decay = 0.0;  // adamw default 0.004; any optimizer may set it
  double momentum = 0.0;      // sgd, rmsprop
  bool nesterov = false;      // sgd
  double rho = 0.9;           // rmsprop
  bool centered = false;      // rmsprop
};

OptimizerConfig::Kind optimizer_kind(const std::string& name);
const char* optimizer_class_name(OptimizerConfig::Kind kind);  // "Adam", "SGD", ...

// Number of slot buffers (each as long as the flat parameter buffer), in
// Keras' per-variable order: adam m, v (+ vhat); sgd momentum (if any);
// rmsprop velocity (+ momentum) (+ average_gradient).
int slot_count(const OptimizerConfig& c);
std::vector<std::string> slot_names(const OptimizerConfig& c);

// The per-step values of update `iteration` + 1 (the block the step writes
// to the device once per step; core/step_scalars.h).
StepScalars step_scalars(const OptimizerConfig& c, int64_t iteration);

// One update of every variable, the per-step values read from the device
// block `s`; slots point to slot_count() buffers.
void apply_update(Backend& be, const OptimizerConfig& c, const StepScalars* s, int64_t n,
                  float* params, const float* grads, const std::vector<float*>& slots);
// The same for a caller without a block: `iteration` is the number of
// updates done before this one (Keras' optimizer.iterations).
void apply_update(Backend& be, const OptimizerConfig& c, int64_t iteration, int64_t n,
                  float* params, const float* grads, const std::vector<float*>& slots);

void validate(const OptimizerConfig& c);

}  // namespace mr
