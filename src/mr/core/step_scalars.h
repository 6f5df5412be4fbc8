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
};

}  // namespace mr
