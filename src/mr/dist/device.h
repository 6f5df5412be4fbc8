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
  std::string name() const;          // "cpu:0", "gpu:1"
  std::string display_name() const;  // "/device:CPU:0", "/device:GPU:1" (TensorFlow's)
  bool operator==(const DeviceSpec& o) const { return kind == o.kind && index == o.index; }
};

// Accepts "/cpu:0", "cpu:0", "CPU:0", "/device:CPU:0",
// "/job:localhost/replica:0/task:0/device:GPU:1" (and the same for gpu); throws mr::Error (value)
// otherwise.
DeviceSpec parse_device(const std::string& text);

// The devices of a strategy given by name: each parsed (parse_device()),
// none twice (Error(value)), every GPU present among the CUDA devices split
// into `logical_per_gpu` logical GPUs each (Error(device) otherwise), and
// placed (assign_gpu_ordinals()).
std::vector<DeviceSpec> resolve_devices(const std::vector<std::string>& names, int logical_per_gpu);

// Every device this process can use, placed: cpu:0 (CPU devices are logical,
// any index exists), then each logical GPU.
std::vector<DeviceSpec> visible_devices(int logical_per_gpu);

// The devices of a strategy made without a device list: all (logical) GPUs
// when there are any, else cpu:0.
std::vector<DeviceSpec> default_devices(int logical_per_gpu);

// Places logical GPUs on physical ones: with n logical GPUs per physical GPU,
// gpu:k is on CUDA device k / n (devices whose ordinal is already set keep it).
void assign_gpu_ordinals(std::vector<DeviceSpec>& devices, int logical_per_gpu);

// The backend of `device` with `threads` CPU threads for its work, from the
// backend registry (core/backend_registry.h).
inline std::unique_ptr<Backend> create_backend(const DeviceSpec& device, int threads) {
  return create_backend(device.kind, device.index, device.cuda_ordinal(), threads);
}

}  // namespace mr
