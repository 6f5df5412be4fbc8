// Devices a strategy can place replicas on. CPU devices are logical: "cpu:k"
// exists for every k, so N CPU replicas need no setup.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/backend_registry.h"

namespace mr {

struct DeviceSpec {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;
  // GPUs: the CUDA device that holds this logical GPU (-1: the same as index;
  // set when each physical GPU is split into several logical ones).
  int ordinal = -1;
  int cuda_ordinal() const { return ordinal < 0 ? index : ordinal; }
  std::string name() const;  // "cpu:0", "gpu:1"
  bool operator==(const DeviceSpec& o) const { return kind == o.kind && index == o.index; }
};

// Accepts "/cpu:0", "cpu:0", "CPU:0", "/device:CPU:0",
// "/job:localhost/replica:0/task:0/device:GPU:1" (and the same for gpu); throws mr::Error (value)
// otherwise.
DeviceSpec parse_device(const std::string& text);

// Places logical GPUs on physical ones: with n logical GPUs per physical GPU,
// gpu:k is on CUDA device k / n (devices whose ordinal is already set keep it).
void assign_gpu_ordinals(std::vector<DeviceSpec>& devices, int logical_per_gpu);

// The backend of `device` with `threads` CPU threads for its work, from the
// backend registry (core/backend_registry.h).
inline std::unique_ptr<Backend> create_backend(const DeviceSpec& device, int threads) {
  return create_backend(device.kind, device.index, device.cuda_ordinal(), threads);
}

}  // namespace mr
