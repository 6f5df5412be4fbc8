// CPU-only build: no CUDA runtime is linked, so there are no devices to ask.
#include "core/device_info.h"

namespace mr {

bool built_with_cuda() { return false; }
bool built_with_nccl() { return false; }
std::string cuda_runtime_version() { return ""; }
std::string nccl_version() { return ""; }
int cuda_device_count() { return 0; }
std::vector<GpuInfo> cuda_devices() { return {}; }

}  // namespace mr
