// Dynamic loss scaling's end of step (train/loss_scale.h), one formula for
// the CPU backend and the CUDA kernel (MR_HD): Keras' LossScaleOptimizer
// moves its scale after every step, and the next step's block is picked by
// the count of applied steps, so that a skipped step's iteration is retried
// with the same learning rate, bias corrections and random masks.
#pragma once

#include "core/hd.h"
#include "core/step_scalars.h"

namespace mr::loss_scale {

MR_HD void advance(const LossScaleAdvance& a) {
  LossScaleWord* w = a.word;
  StepScalars* b = a.block;
  const bool skipped = b->skip != 0.0f;
  if (skipped) {
    // Keras' _stateless_handle_non_finite_grads: halve, restart the count.
    w->step_counter = 0;
    w->scale *= 0.5f;
    ++w->skipped;
  } else {
    ++w->applied;
    if (w->step_counter == a.growth_steps - 1) {  // Keras' upscale()
      w->step_counter = 0;
      w->scale *= 2.0f;
    } else {
      ++w->step_counter;
    }
  }
  w->last_skipped = skipped ? 1.0f : 0.0f;
  // The host writes the word again before `applied` can pass the last row;
  // the clamp only keeps a broken promise inside the table.
  const int64_t row = w->applied < a.table_rows ? w->applied : a.table_rows - 1;
  *b = a.table[row];
  b->loss_scale = w->scale;
  b->skip = 0.0f;
}

}  // namespace mr::loss_scale
