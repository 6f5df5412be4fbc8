// Dynamic loss scaling, as Keras 3's LossScaleOptimizer does it
// (keras.optimizers.LossScaleOptimizer; compile(auto_scale_loss = TRUE)
// wraps the optimizer in one under the "mixed_float16" policy):
//   - the loss's gradient is multiplied by the scale (StepScalars::
//     loss_scale); the logged loss is not;
//   - after the all-reduce every replica computes the same non-finite flag of
//     the summed gradients (itself all-reduced, so that a replica whose own
//     sum is finite still sees a peer's overflow);
//   - finite: the gradients are divided by the scale and the inner optimizer
//     applies them (accumulation, clipping, update, EMA as without scaling);
//     then, when step_counter == dynamic_growth_steps - 1, the scale doubles
//     and step_counter = 0, else step_counter += 1;
//   - not finite: nothing is applied (no update, no accumulation, no EMA, the
//     iterations do not advance), the scale halves and step_counter = 0.
// The skip is decided on the device (a word of the replica's step block the
// update ops read), never by a host sync inside the step, and the scale moves
// on the device too (core/step_scalars.h: LossScaleWord): the host queues the
// next step without knowing whether this one was skipped, and reads the word
// only where it logs (Model::settle_loss_scale).
// Every op of the step reads the scale from the step block (the loss
// gradients are multiplied by it on the device: Step::scale_loss_gradients),
// so a step under loss scaling can be captured as a CUDA graph and replayed.
#pragma once

#include <cstdint>

namespace mr {

// compile()'s part: Keras' LossScaleOptimizer(initial_scale,
// dynamic_growth_steps). `dynamic` false: no loss scaling (the step's scale
// is 1 and no flag is computed).
struct LossScaleConfig {
  bool dynamic = false;
  double initial_scale = 32768.0;  // 2^15
  int64_t dynamic_growth_steps = 2000;
};

// The optimizer variables LossScaleOptimizer adds (saved with the optimizer
// in Keras' order: step_counter, dynamic_scale, then the inner optimizer's).
struct LossScaleState {
  float scale = 32768.0f;     // dynamic_scale
  int64_t step_counter = 0;   // finite steps since the scale last changed
  int64_t skipped = 0;        // steps skipped for non-finite gradients since compile()
  bool last_skipped = false;  // whether the last training step was skipped
};

}  // namespace mr
