// The values that change every step, kept in one small device-resident block
// per replica and written once per step before any op reads it: by the host
// (train/step.cpp), or under dynamic loss scaling by the device itself at the
// end of the step before (LossScaleWord below). Ops read them from device memory instead of taking
// them as kernel arguments, so that a step captured once (a CUDA graph) replays with each step's
// values. Plain old data: the same bytes on the host and the device.
#pragma once

#include <cstdint>

namespace mr {

struct StepScalars {
  float lr = 0.0f;          // learning rate
  float alpha = 0.0f;       // Adam's step size, lr * sqrt(1 - b2^t) / (1 - b1^t)
  float wd_lr = 0.0f;       // weight decay * learning rate (decoupled decay)
  float loss_scale = 1.0f;  // mixed precision's loss scale (1 until then)
  uint64_t step = 0;        // global training step: keys random masks
  // ---- the update pipeline (issue 13, i13-opt: nn/optimizer.cpp fills them) --
  // opt: the optimizer's per-step factors, computed on the host from the
  // iteration in float32 as Keras computes them (nn/optimizer.cpp names
  // them per rule: e.g. Adamax 1 - beta_1^t, Nadam's u_t, u_t+1 and
  // u_product, Lamb's bias corrections).
  float opt[6] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  float ema_momentum = 0.0f;  // EMA: 0 on the first update (Keras), else ema_momentum
  // ---- i14-mpcore: dynamic loss scaling (train/loss_scale.h) ----
  // 0 as the host writes the block; set by Backend::nonfinite_flag (the
  // gradients' non-finite flag, then all-reduced) when loss scaling is on.
  // Non-zero: every update op (optimizer rules, Lamb, EMA) leaves its
  // buffers as they are, on every replica alike. The one op that writes the
  // block after the host.
  float skip = 0.0f;
};

// ---- dynamic loss scaling kept on the device (train/loss_scale.h) ----
// The loss scale's state as the device moves it at the end of every training
// step (Backend::advance_loss_scale), so that the host needs no result of a
// step before it queues the next: it reads the word only where it logs
// (Model::settle_loss_scale). Counts run from the moment the host wrote it.
struct LossScaleWord {
  float scale = 1.0f;         // Keras' dynamic_scale
  float last_skipped = 0.0f;  // 1 when the last step was skipped
  int64_t step_counter = 0;   // Keras' step_counter
  int64_t applied = 0;        // steps applied since the host wrote the word
  int64_t skipped = 0;        // steps skipped since then
};

// Backend::advance_loss_scale's operands, all in device memory: `block` is
// the step's block (its skip word read, then overwritten with the next
// step's values), `table` holds the blocks of the steps to come by applied
// count (row k: `applied` == k; the host fills it ahead, and writes the word
// again before the rows run out).
struct LossScaleAdvance {
  StepScalars* block = nullptr;
  LossScaleWord* word = nullptr;
  const StepScalars* table = nullptr;
  int64_t table_rows = 0;
  int64_t growth_steps = 0;  // Keras' dynamic_growth_steps
};

}  // namespace mr
