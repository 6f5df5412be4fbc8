// The values that change every step, kept in one small device-resident block
// per replica and written once per step (train/step.cpp) before any op reads
// it. Ops read them from device memory instead of taking them as kernel
// arguments, so that a step captured once (a CUDA graph) replays with each
// step's values. Plain old data: the same bytes on the host and the device.
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

}  // namespace mr
