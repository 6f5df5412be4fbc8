// What callback_device_monitor() and fit(verbose = 2) show for a training
// epoch, per replica: the step clock's parts (train/step_clock.h), the
// backend's memory (Backend::memory_use()) and, on a GPU, its utilisation
// through NVML (core/gpu_utilization.h). Model::device_report() fills it
// (train/device_report.cpp); C++ measures, R displays.
#pragma once

#include <string>

#include "core/backend.h"
#include "train/step_clock.h"

namespace mr {

struct ReplicaReport {
  std::string device;  // "cpu:0", "gpu:1" (DeviceSpec::name())
  StepBreakdown time;  // the last closed training epoch
  MemoryUse memory;    // now, peak since that epoch opened; device_used -1 on the CPU
  int gpu_util = -1;   // percent, -1 on the CPU or without NVML
  // The replica's host threads now (a CPU replica's team: how many it has,
  // how many take work, and why fewer; core/thread_team.h).
  int threads = 1, active_threads = 1;
  std::string threads_why;
};

}  // namespace mr
