#include "core/gpu_utilization.h"

#include <dlfcn.h>

namespace mr {

namespace {
// NVML_SUCCESS; every other return value is a failure here.
constexpr int kNvmlSuccess = 0;

template <class Fn>
Fn symbol(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}
}  // namespace

GpuUtilization::GpuUtilization(const std::string& library) {
  lib_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib_ == nullptr) return;
  // nvmlInit_v2 / ..._v2 are the current ABI names (nvml.h maps the
  // unversioned names to them).
  auto init = symbol<InitFn>(lib_, "nvmlInit_v2");
  shutdown_ = symbol<ShutdownFn>(lib_, "nvmlShutdown");
  by_bus_id_ = symbol<ByBusIdFn>(lib_, "nvmlDeviceGetHandleByPciBusId_v2");
  utilization_ = symbol<UtilFn>(lib_, "nvmlDeviceGetUtilizationRates");
  if (init == nullptr || shutdown_ == nullptr || by_bus_id_ == nullptr || utilization_ == nullptr)
    return;
  init_ok_ = init() == kNvmlSuccess;
}

GpuUtilization::~GpuUtilization() {
  if (init_ok_) shutdown_();
  if (lib_ != nullptr) dlclose(lib_);
}

int GpuUtilization::percent(const std::string& pci_bus_id) const {
  if (!init_ok_ || pci_bus_id.empty()) return -1;
  void* device = nullptr;
  if (by_bus_id_(pci_bus_id.c_str(), &device) != kNvmlSuccess) return -1;
  unsigned int rates[2] = {0, 0};  // nvmlUtilization_t: gpu, memory (percent)
  if (utilization_(device, rates) != kNvmlSuccess) return -1;
  return static_cast<int>(rates[0]);
}

}  // namespace mr
