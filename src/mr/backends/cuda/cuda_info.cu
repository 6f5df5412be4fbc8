// CUDA build of core/device_info.h. The runtime is linked; whether a driver
// and devices exist is only known at run time.
#include <cuda_runtime.h>

#include "build_config.h"
#include "core/device_info.h"
#include "core/error.h"

#if MR_WITH_NCCL
#include <nccl.h>
#endif
#if MR_WITH_CUDNN
#include <cudnn.h>
#endif

namespace mr {

bool built_with_cuda() { return true; }

bool built_with_nccl() { return MR_WITH_NCCL != 0; }

bool built_with_cudnn() { return MR_WITH_CUDNN != 0; }

std::string cudnn_version() {
#if MR_WITH_CUDNN
  // cuDNN 9 encodes major*10000 + minor*100 + patch, cuDNN 8 major*1000 +
  // minor*100 + patch.
  const size_t v = cudnnGetVersion();
  const size_t major = v >= 10000 ? v / 10000 : v / 1000;
  const size_t minor = v >= 10000 ? (v % 10000) / 100 : (v % 1000) / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
#else
  return "";
#endif
}

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

void cuda_memory(int ordinal, int64_t* free_bytes, int64_t* total_bytes) {
  const int n = cuda_device_count();
  MR_CHECK(ordinal >= 0 && ordinal < n, device, "there is no CUDA device ", ordinal, " (", n,
           " visible)");
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) current = ordinal;
  size_t f = 0, t = 0;
  cudaError_t st = cudaSetDevice(ordinal);
  if (st == cudaSuccess) st = cudaMemGetInfo(&f, &t);
  cudaSetDevice(current);
  if (st != cudaSuccess)
    fail(ErrorKind::device, "cudaMemGetInfo on CUDA device ", ordinal,
         " failed: ", cudaGetErrorString(st));
  *free_bytes = static_cast<int64_t>(f);
  *total_bytes = static_cast<int64_t>(t);
}

namespace {
// Whether `from` can map `to`'s memory now (cudaDeviceEnablePeerAccess done):
// CUDA has no query for it, so probe with the enable call itself, which
// reports "already enabled" without side effects when it is.
bool peer_enabled(int from, int to) {
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) current = from;
  bool enabled = false;
  if (cudaSetDevice(from) == cudaSuccess) {
    const cudaError_t st = cudaDeviceEnablePeerAccess(to, 0);
    cudaGetLastError();  // "already enabled" is reported as an error: clear it
    // The probe must not enable access as a side effect: undo a fresh enable.
    if (st == cudaSuccess) cudaDeviceDisablePeerAccess(to);
    enabled = st == cudaErrorPeerAccessAlreadyEnabled;
  }
  cudaSetDevice(current);
  return enabled;
}
}  // namespace

bool cuda_enable_peer_access(int from, int to) {
  if (from == to) return true;
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, from, to) != cudaSuccess || !can) {
    cudaGetLastError();
    return false;
  }
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) current = from;
  bool enabled = false;
  if (cudaSetDevice(from) == cudaSuccess) {
    const cudaError_t st = cudaDeviceEnablePeerAccess(to, 0);
    enabled = st == cudaSuccess || st == cudaErrorPeerAccessAlreadyEnabled;
    cudaGetLastError();
  }
  cudaSetDevice(current);
  return enabled;
}

std::string cuda_pci_bus_id(int ordinal) {
  char id[32] = {};
  if (cudaDeviceGetPCIBusId(id, static_cast<int>(sizeof(id)), ordinal) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return id;
}

std::string cuda_link(int a, int b) {
  if (a == b) return "same device";
  int access = 0, atomics = 0;
  if (cudaDeviceGetP2PAttribute(&access, cudaDevP2PAttrAccessSupported, a, b) != cudaSuccess ||
      cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, a, b) !=
          cudaSuccess) {
    cudaGetLastError();
    return "unknown";
  }
  if (!access) return "PCIe via host";
  const std::string kind = atomics ? "NVLink" : "PCIe P2P";
  // What the copies use is what is enabled, not what the hardware offers.
  if (peer_enabled(a, b) && peer_enabled(b, a)) return kind;
  return kind + " capable (peer access not enabled: copies go through the host)";
}

}  // namespace mr
