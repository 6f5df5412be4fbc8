// CUDA build of core/device_info.h. The runtime is linked; whether a driver
// and devices exist is only known at run time.
#include <cuda_runtime.h>

#include "build_config.h"
#include "core/device_info.h"
#include "core/error.h"

#if MR_WITH_NCCL
#include <nccl.h>
#endif

namespace mr {

bool built_with_cuda() { return true; }

bool built_with_nccl() { return MR_WITH_NCCL != 0; }

std::string cuda_runtime_version() {
  int v = 0;
  // cudaRuntimeGetVersion needs no driver; fall back to the version compiled
  // against if it fails anyway.
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) v = CUDART_VERSION;
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string nccl_version() {
#if MR_WITH_NCCL
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return MR_NCCL_VERSION_STR;
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch; older ones
  // major*1000 + minor*100 + patch.
  const int major = v >= 10000 ? v / 10000 : v / 1000;
  const int minor = v >= 10000 ? (v % 10000) / 100 : (v % 1000) / 100;
  const int patch = v % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
#else
  return "";
#endif
}

int cuda_device_count() {
  int n = 0;
  const cudaError_t st = cudaGetDeviceCount(&n);
  if (st == cudaErrorInsufficientDriver || st == cudaErrorNoDevice) {
    // No driver (35) or no device (100) means "no GPU here", not a failure.
    // Clear the sticky last-error so later runtime calls do not report it.
    cudaGetLastError();
    return 0;
  }
  if (st != cudaSuccess)
    fail(ErrorKind::device, "cudaGetDeviceCount failed: ", cudaGetErrorString(st));
  return n;
}

std::vector<GpuInfo> cuda_devices() {
  const int n = cuda_device_count();
  std::vector<GpuInfo> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp prop{};
    const cudaError_t st = cudaGetDeviceProperties(&prop, i);
    if (st != cudaSuccess)
      fail(ErrorKind::device, "cudaGetDeviceProperties(", i, ") failed: ", cudaGetErrorString(st));
    out.push_back(
        GpuInfo{i, prop.name, static_cast<int64_t>(prop.totalGlobalMem), prop.major, prop.minor});
  }
  return out;
}

}  // namespace mr
