// Types of the update-pipeline ops of core/backend.h (issue 13: gradient
// clipping, the optimizers beyond SGD / Adam / RMSprop, EMA, gradient
// accumulation). Plain old data, passed by value to the kernels.
#pragma once

#include <cstdint>

namespace mr {

// The element-wise update rules of Backend::optimizer_update (Keras 3's
// update_step of each class; formulas in backends/common/optimizer_math.h).
// Lamb is not here: its trust ratio needs per-variable norms
// (Backend::lamb_moments + segment_sumsq + lamb_apply).
enum class UpdateRule { adagrad, adadelta, adamax, nadam, ftrl, lion };

// Backend::clip_gradients' modes (Keras' BaseOptimizer._clip_gradients).
enum class GradientClip { value, norm, global_norm };

// The constant hyper-parameters of a rule (the per-step values come from the
// step's device block, StepScalars::lr / opt[]).
struct UpdateHyper {
  float beta_1 = 0.9f, beta_2 = 0.999f, epsilon = 1e-7f;
  float rho = 0.95f;           // adadelta
  float lr_power = -0.5f;      // ftrl learning_rate_power
  float l1 = 0.0f, l2 = 0.0f;  // ftrl l1 / l2 regularization strengths
  float l2_shrinkage = 0.0f;   // ftrl l2_shrinkage_regularization_strength
  float beta = 0.0f;           // ftrl beta
};

}  // namespace mr
