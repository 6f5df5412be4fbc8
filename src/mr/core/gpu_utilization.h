// GPU utilisation through NVML, loaded with dlopen where the driver
// installed it and never linked: a build that linked libnvidia-ml would not
// load on machines without a GPU driver. Absent library, absent symbols, a
// failed nvmlInit or an unknown device all read as "not available" (-1),
// never as an error: the figure is a report, not something training needs.
#pragma once

#include <string>

namespace mr {

class GpuUtilization {
 public:
  // Opens `library` (the driver's soname by default; tests pass a name that
  // does not exist) and initialises NVML. Never throws.
  explicit GpuUtilization(const std::string& library = "libnvidia-ml.so.1");
  ~GpuUtilization();
  GpuUtilization(const GpuUtilization&) = delete;
  GpuUtilization& operator=(const GpuUtilization&) = delete;

  // Whether NVML loaded and initialised.
  bool available() const { return init_ok_; }
  // Percent of the last sample period (NVML's, 1/6 s to 1 s) during which a
  // kernel ran on the GPU at PCI bus id `pci_bus_id` ("0000:3B:00.0"); -1
  // when not available. A host call into the driver: no device sync.
  int percent(const std::string& pci_bus_id) const;

 private:
  // NVML's C entry points, resolved by name (nvml.h is not needed to build).
  using InitFn = int (*)();
  using ShutdownFn = int (*)();
  using ByBusIdFn = int (*)(const char*, void**);
  using UtilFn = int (*)(void*, unsigned int*);  // nvmlUtilization_t: {gpu, memory}
  void* lib_ = nullptr;
  ShutdownFn shutdown_ = nullptr;
  ByBusIdFn by_bus_id_ = nullptr;
  UtilFn utilization_ = nullptr;
  bool init_ok_ = false;
};

}  // namespace mr
